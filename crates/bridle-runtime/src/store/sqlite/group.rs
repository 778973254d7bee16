//! Group commit on the SQLite writer: every write transaction of the store (audit appends,
//! run admissions, job moves, approvals) joins ONE open database transaction as a savepoint,
//! and a single `COMMIT` ends many of them.
//!
//! How a transaction runs: it takes the writer (a FIFO async mutex), opens the group's
//! `BEGIN IMMEDIATE` if none is open, runs its statements inside `SAVEPOINT member` in the
//! calling task, and at its commit releases the savepoint, records itself as waiting, lets go of
//! the writer and wakes the committer task. The committer queues for the writer behind every
//! transaction that asked for it first, so all of them join the group before it commits; it
//! then commits (on the blocking pool when `synchronous=full` makes the commit fsync) and tells
//! each member. A member's commit returns only after the `COMMIT` that holds its writes, so
//! nothing is acknowledged before it is durable at the store's setting; a member that rolls
//! back undoes only its savepoint. A group that reaches [`MAX_MEMBERS`] is committed by the
//! member that filled it.
//!
//! INVARIANT: outside the writer's lock, the connection is either in autocommit mode (no group)
//! or inside the group's transaction with no savepoint open; only the lock's holder moves it
//! between these states.

use std::sync::{Arc, Weak};

use bridle_core::ports::{StoreError, StoreResult};
use tokio::sync::{Mutex, Notify, OwnedMutexGuard, oneshot};

use super::driver::{SqliteConn, sql_err};

/// Members of one group before a member commits it itself.
pub(crate) const MAX_MEMBERS: usize = 512;

/// The writer connection and the group transaction open on it.
#[derive(Debug)]
pub struct Writer {
    pub(crate) conn: SqliteConn,
    /// Members that released their savepoint and wait for the group's commit.
    waiting: Vec<oneshot::Sender<StoreResult<()>>>,
    /// Whether the group's `BEGIN IMMEDIATE` ran.
    open: bool,
    /// Whether the commit fsyncs.
    full: bool,
}

/// The writer of a store with its committer task.
#[derive(Debug)]
pub(crate) struct GroupWriter {
    writer: Arc<Mutex<Writer>>,
    wake: Arc<Notify>,
}

impl Drop for GroupWriter {
    fn drop(&mut self) {
        // The committer holds only a weak reference: woken, it finds the writer gone and ends.
        self.wake.notify_one();
    }
}

impl GroupWriter {
    /// Starts the committer on the current tokio runtime.
    pub(crate) fn start(conn: SqliteConn, full: bool) -> Arc<Self> {
        let writer = Arc::new(Mutex::new(Writer { conn, waiting: Vec::new(), open: false, full }));
        let wake = Arc::new(Notify::new());
        tokio::spawn(committer(Arc::downgrade(&writer), wake.clone()));
        Arc::new(Self { writer, wake })
    }

    /// The writer with no group open (a pending group is committed first): for single
    /// statements in autocommit mode, and the reads of `sqlite::memory:`.
    pub(crate) async fn exclusive(&self) -> StoreResult<OwnedMutexGuard<Writer>> {
        let guard = self.writer.clone().lock_owned().await;
        match commit_group(guard).await {
            (Some(guard), _) => Ok(guard),
            (None, done) => {
                Err(done.err().unwrap_or_else(|| StoreError::Unavailable("the SQLite writer stopped".to_owned())))
            }
        }
    }

    /// Begins a member transaction: the writer, inside the group's transaction and a savepoint.
    pub(crate) async fn begin(self: &Arc<Self>) -> StoreResult<Member> {
        let mut guard = self.writer.clone().lock_owned().await;
        if guard.open && guard.conn.get()?.is_autocommit() {
            // SQLite rolled the group back on its own (an I/O error, a full disk): its members
            // did not commit.
            guard.open = false;
            fail(&mut guard, &StoreError::Unavailable("the SQLite group transaction was rolled back".to_owned()));
        }
        if !guard.open {
            begin_immediate(&mut guard).await?;
        }
        guard.conn.batch("SAVEPOINT member").map_err(|e| sql_err(&e))?;
        Ok(Member { guard: Some(guard), group: self.clone() })
    }

    /// Closes the connection after committing what is pending; later calls fail.
    pub(crate) async fn close(&self) {
        if let Ok(mut guard) = self.exclusive().await {
            guard.conn.close();
        }
    }
}

/// `BEGIN IMMEDIATE`, retried after a pause while another connection holds the write lock.
async fn begin_immediate(guard: &mut Writer) -> StoreResult<()> {
    let started = std::time::Instant::now();
    loop {
        match guard.conn.batch("BEGIN IMMEDIATE") {
            Ok(()) => {
                guard.open = true;
                return Ok(());
            }
            Err(e) if super::driver::is_busy(&e) && started.elapsed() < super::driver::BUSY_TIMEOUT => {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            Err(e) => return Err(sql_err(&e)),
        }
    }
}

fn fail(w: &mut Writer, e: &StoreError) {
    for member in w.waiting.drain(..) {
        let _ = member.send(Err(e.clone()));
    }
}

/// Commits the open group, if any, and answers its members; hands the writer back (unless the
/// blocking pool lost it, when the runtime shuts down) with the commit's result.
async fn commit_group(mut guard: OwnedMutexGuard<Writer>) -> (Option<OwnedMutexGuard<Writer>>, StoreResult<()>) {
    if !guard.open {
        return (Some(guard), Ok(()));
    }
    let (mut guard, done) = if guard.full {
        let joined = tokio::task::spawn_blocking(move || {
            let done = end(&mut guard);
            (guard, done)
        })
        .await;
        match joined {
            Ok(both) => both,
            // The members' answers went with the writer: each sees "the writer stopped".
            Err(e) => return (None, Err(StoreError::Unavailable(format!("the SQLite commit stopped: {e}")))),
        }
    } else {
        let done = end(&mut guard);
        (guard, done)
    };
    match &done {
        Ok(()) => {
            for member in guard.waiting.drain(..) {
                let _ = member.send(Ok(()));
            }
        }
        Err(e) => fail(&mut guard, &e.clone()),
    }
    (Some(guard), done)
}

/// `COMMIT` (rolled back when it fails), leaving the connection in autocommit mode.
fn end(w: &mut Writer) -> StoreResult<()> {
    w.open = false;
    let done = w.conn.batch("COMMIT").map_err(|e| sql_err(&e));
    if done.is_err() && w.conn.get().is_ok_and(|c| !c.is_autocommit()) {
        let _ = w.conn.batch("ROLLBACK");
    }
    done
}

/// Commits a group once every transaction that queued for the writer before the wake-up has
/// joined it.
async fn committer(writer: Weak<Mutex<Writer>>, wake: Arc<Notify>) {
    loop {
        wake.notified().await;
        let Some(writer) = writer.upgrade() else { return };
        let guard = writer.lock_owned().await;
        let _ = commit_group(guard).await;
    }
}

/// One write transaction: a savepoint in the group's transaction, holding the writer.
pub struct Member {
    guard: Option<OwnedMutexGuard<Writer>>,
    group: Arc<GroupWriter>,
}

impl Member {
    /// Releases the savepoint and waits for the `COMMIT` of the group that holds it.
    pub(crate) async fn commit(mut self) -> StoreResult<()> {
        let Some(mut guard) = self.guard.take() else { return Ok(()) };
        if let Err(e) = guard.conn.batch("RELEASE member") {
            undo(&mut guard);
            return Err(sql_err(&e));
        }
        let (tx, rx) = oneshot::channel();
        guard.waiting.push(tx);
        if guard.waiting.len() >= MAX_MEMBERS {
            let (_guard, done) = commit_group(guard).await;
            return done;
        }
        drop(guard);
        self.group.wake.notify_one();
        rx.await.unwrap_or_else(|_| Err(StoreError::Unavailable("the SQLite writer stopped".to_owned())))
    }

    /// Undoes the member's writes; the group goes on.
    pub(crate) fn rollback(mut self) {
        if let Some(mut guard) = self.guard.take() {
            undo(&mut guard);
        }
    }
}

/// Rolls back to the member's savepoint and leaves it; a group that no member waits for is
/// rolled back whole.
fn undo(w: &mut Writer) {
    let undone = w.conn.batch("ROLLBACK TO member; RELEASE member");
    if undone.is_err() || w.waiting.is_empty() {
        w.open = false;
        if w.conn.get().is_ok_and(|c| !c.is_autocommit()) {
            let _ = w.conn.batch("ROLLBACK");
        }
        if undone.is_err() {
            fail(w, &StoreError::Unavailable("the SQLite group transaction was rolled back".to_owned()));
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            undo(&mut guard);
        }
    }
}

impl std::ops::Deref for Member {
    type Target = SqliteConn;
    fn deref(&self) -> &SqliteConn {
        &self.guard.as_ref().unwrap_or_else(|| unreachable!("an open member holds the writer")).conn
    }
}

impl std::ops::DerefMut for Member {
    fn deref_mut(&mut self) -> &mut SqliteConn {
        &mut self.guard.as_mut().unwrap_or_else(|| unreachable!("an open member holds the writer")).conn
    }
}
