//! Group commit on the SQLite writer: every write transaction of the store joins ONE open
//! database transaction (as a savepoint, or bare: [`run_bare`]), and a single `COMMIT` ends many
//! of them.
//!
//! Two ways in. The hot writes (audit appends, run admissions) queue a job
//! ([`GroupWriter::submit`]); the committer, a thread of its own, takes every queued job, runs
//! each (in a savepoint of its own unless the job keeps whatever it writes: [`run_bare`]) and
//! commits them together, so a caller never waits for the writer
//! to be handed to it, and the writer changes hands once per group. Every other write
//! transaction ([`GroupWriter::begin`], from the generic port code) takes the writer in its task,
//! opens the group's `BEGIN IMMEDIATE` if none is open, runs inside `SAVEPOINT member`, and at its
//! commit releases the savepoint, lets go of the writer and wakes the committer, which commits it
//! with the next group. Either way a caller is answered only after the `COMMIT` that holds its
//! writes, so nothing is acknowledged before it is durable at the store's setting; a member, or
//! a job in a savepoint, that rolls back undoes only its savepoint, and a bare job that fails
//! after a write takes its whole group (everyone in it is told). The committer is a thread, not
//! a task: under load the runtime's queues hold many callers, and a task would wait behind them
//! at every hand-over.
//!
//! INVARIANT: outside the writer's lock, the connection is either in autocommit mode (no group)
//! or inside the group's transaction with no savepoint open; only the lock's holder moves it
//! between these states.

use std::future::Future;
use std::sync::mpsc;
use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bridle_core::ports::{StoreError, StoreResult};
use rusqlite::Connection;
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot};

use super::driver::{BUSY_TIMEOUT, SqliteConn, is_busy, sql_err};

/// Members of one group before a member commits it itself.
const MAX_MEMBERS: usize = 512;
/// Pause between attempts to begin while another connection holds SQLite's write lock.
const BUSY_PAUSE: Duration = Duration::from_millis(1);

/// What a finished member or job is told once its group's commit is known.
type Finish = Box<dyn FnOnce(StoreResult<()>) + Send>;
/// A queued job's statements: they run, say whether they are kept, and what to tell the
/// caller after the commit.
type Statements = Box<dyn FnOnce(&mut SqliteConn) -> (bool, Finish) + Send>;

/// A queued job.
struct Queued {
    statements: Statements,
    /// Whether the job runs in a savepoint of its own, so that undoing it leaves the group
    /// whole. Without one (a job that keeps whatever it wrote), a job that fails or undoes
    /// after a write takes its whole group with it: see [`run_bare`].
    savepoint: bool,
}

/// What wakes the committer.
enum Wake {
    /// Run this job in the next group.
    Job(Queued),
    /// A member waits: commit the open group.
    Commit,
}

/// The writer connection and the group transaction open on it.
pub struct Writer {
    pub(crate) conn: SqliteConn,
    /// Members and jobs that released their savepoint and wait for the group's commit.
    waiting: Vec<Finish>,
    /// Whether the group's `BEGIN IMMEDIATE` ran.
    open: bool,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("open", &self.open).field("waiting", &self.waiting.len()).finish()
    }
}

/// The writer of a store and the way to its committer thread (which ends when this is dropped).
pub(crate) struct GroupWriter {
    writer: Arc<Mutex<Writer>>,
    wake: StdMutex<mpsc::Sender<Wake>>,
}

impl std::fmt::Debug for GroupWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupWriter").finish_non_exhaustive()
    }
}

impl GroupWriter {
    /// Starts the committer thread.
    pub(crate) fn start(conn: SqliteConn) -> StoreResult<Arc<Self>> {
        let writer = Arc::new(Mutex::new(Writer { conn, waiting: Vec::new(), open: false }));
        let (tx, rx) = mpsc::channel();
        let theirs = writer.clone();
        std::thread::Builder::new()
            .name("bridle-sqlite-writer".to_owned())
            .spawn(move || committer(&theirs, &rx))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the SQLite writer: {e}")))?;
        Ok(Arc::new(Self { writer, wake: StdMutex::new(tx) }))
    }

    fn send(&self, wake: Wake) -> Result<(), Wake> {
        self.wake.lock().unwrap_or_else(PoisonError::into_inner).send(wake).map_err(|e| e.0)
    }

    /// Queues `job` for the committer, which runs it in its next group (in a savepoint of its
    /// own if `savepoint`); its answer once that group is committed.
    pub(crate) async fn submit<T: Send + 'static>(
        &self,
        savepoint: bool,
        job: impl FnOnce(&mut SqliteConn) -> StoreResult<(T, bool)> + Send + 'static,
    ) -> StoreResult<T> {
        let (tx, rx) = oneshot::channel();
        let statements: Statements = Box::new(move |conn| {
            let (answer, keep) = match job(conn) {
                Ok((value, keep)) => (Ok(value), keep),
                Err(e) => (Err(e), false),
            };
            let finish: Finish = Box::new(move |committed| {
                // Kept writes count only once committed; an undone job's answer stands alone.
                let _ = tx.send(if keep { committed.and(answer) } else { answer });
            });
            (keep, finish)
        });
        if self.send(Wake::Job(Queued { statements, savepoint })).is_err() {
            return Err(stopped());
        }
        rx.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// The writer with no group open (a pending group is committed first): for single
    /// statements in autocommit mode, and the reads of `sqlite::memory:`.
    pub(crate) async fn exclusive(&self) -> StoreResult<OwnedMutexGuard<Writer>> {
        let mut guard = self.writer.clone().lock_owned().await;
        if guard.open {
            // Rare (a single statement while transactions are in flight): fsync, if any, in the task.
            commit_group(&mut guard);
        }
        Ok(guard)
    }

    /// Begins a member transaction: the writer, inside the group's transaction and a savepoint.
    pub(crate) async fn begin(self: &Arc<Self>) -> StoreResult<Member> {
        let mut guard = self.writer.clone().lock_owned().await;
        let started = Instant::now();
        loop {
            match open_group(&mut guard) {
                Err(Some(e)) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    tokio::time::sleep(BUSY_PAUSE).await;
                }
                Err(Some(e)) => return Err(sql_err(&e)),
                Err(None) => return Err(closed()),
                Ok(()) => break,
            }
        }
        guard.conn.control("SAVEPOINT member").map_err(|e| sql_err(&e))?;
        Ok(Member { guard: Some(guard), group: self.clone() })
    }

    /// Closes the connection after committing what is pending; later calls fail.
    pub(crate) async fn close(&self) {
        if let Ok(mut guard) = self.exclusive().await {
            guard.conn.close();
        }
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the SQLite writer stopped".to_owned())
}

fn closed() -> StoreError {
    StoreError::Unavailable("the SQLite store is closed".to_owned())
}

/// Makes sure the group's transaction is open on the writer: `Err(Some)` is SQLite's refusal
/// (a held lock is worth another try), `Err(None)` a closed store.
fn open_group(w: &mut Writer) -> Result<(), Option<rusqlite::Error>> {
    let autocommit = w.conn.get().map_err(|_| None)?.is_autocommit();
    if w.open && autocommit {
        // SQLite rolled the group back on its own (an I/O error, a full disk): its members did
        // not commit.
        w.open = false;
        fail(w, &StoreError::Unavailable("the SQLite group transaction was rolled back".to_owned()));
    }
    if !w.open {
        w.conn.forget_heads();
        w.conn.control("BEGIN IMMEDIATE").map_err(Some)?;
        w.open = true;
    }
    Ok(())
}

fn fail(w: &mut Writer, e: &StoreError) {
    w.conn.forget_heads();
    for finish in w.waiting.drain(..) {
        finish(Err(e.clone()));
    }
}

/// Commits the open group, if any, and answers everyone waiting for it.
fn commit_group(w: &mut Writer) {
    if !w.open {
        return;
    }
    w.open = false;
    match w.conn.control("COMMIT") {
        Ok(()) => {
            for finish in w.waiting.drain(..) {
                finish(Ok(()));
            }
        }
        Err(e) => {
            if w.conn.get().is_ok_and(|c| !c.is_autocommit()) {
                let _ = w.conn.control("ROLLBACK");
            }
            fail(w, &sql_err(&e));
        }
    }
}

/// The committer thread: waits for work, takes the writer, runs every queued job and commits
/// the group; ends when the store is dropped.
fn committer(writer: &Arc<Mutex<Writer>>, wake: &mpsc::Receiver<Wake>) {
    while let Ok(first) = wake.recv() {
        let mut jobs = Vec::new();
        for next in std::iter::once(first).chain(wake.try_iter()) {
            if let Wake::Job(job) = next {
                jobs.push(job);
            }
        }
        let mut guard = writer.clone().blocking_lock_owned();
        if !jobs.is_empty() {
            let started = Instant::now();
            let opened = loop {
                match open_group(&mut guard) {
                    Err(Some(e)) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => std::thread::sleep(BUSY_PAUSE),
                    Err(Some(e)) => break Err(sql_err(&e)),
                    Err(None) => break Err(closed()),
                    Ok(()) => break Ok(()),
                }
            };
            match opened {
                Ok(()) => jobs.into_iter().for_each(|job| run(&mut guard, job)),
                Err(e) => {
                    for job in jobs {
                        // The job never runs: its statements see a closed connection.
                        let (_, finish) = (job.statements)(&mut SqliteConn::closed());
                        finish(Err(e.clone()));
                    }
                }
            }
        }
        commit_group(&mut guard);
    }
}

/// Runs one queued job in the open group: in a savepoint of its own, or bare.
fn run(w: &mut Writer, job: Queued) {
    if !job.savepoint {
        return run_bare(w, job.statements);
    }
    if let Err(e) = w.conn.control("SAVEPOINT member") {
        let (_, finish) = (job.statements)(&mut SqliteConn::closed());
        finish(Err(sql_err(&e)));
        return;
    }
    let (keep, finish) = (job.statements)(&mut w.conn);
    w.waiting.push(finish);
    if !keep || w.conn.control("RELEASE member").is_err() {
        undo(w);
    }
}

/// Runs a job with no savepoint: a savepoint costs two statements and a copy of every page its
/// job changes into a journal of its own (BENCHMARKS.md, twelfth session). A job that keeps its
/// writes, or undoes having written nothing (a refusal), leaves the group as a savepoint would;
/// one that wrote and then fails or undoes cannot be undone alone, so the whole group is rolled
/// back and every member waiting for it is told so (its own answer stands: nothing it wrote is
/// kept).
fn run_bare(w: &mut Writer, statements: Statements) {
    let before = w.conn.get().map(Connection::total_changes).ok();
    let (keep, finish) = statements(&mut w.conn);
    w.waiting.push(finish);
    let wrote = before != w.conn.get().map(Connection::total_changes).ok();
    if !keep && wrote {
        w.open = false;
        if w.conn.get().is_ok_and(|c| !c.is_autocommit()) {
            let _ = w.conn.control("ROLLBACK");
        }
        fail(w, &StoreError::Unavailable("the SQLite group transaction was rolled back".to_owned()));
    }
}

/// The answer of a job's statements, which on SQLite never wait inside a transaction (they run
/// in the calling thread, and only a statement outside a transaction pauses on a held lock).
pub(crate) fn now<T>(job: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
    let mut job = std::pin::pin!(job);
    match job.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(answer) => answer,
        Poll::Pending => {
            Err(StoreError::Unavailable("a SQLite statement waited inside a group transaction".to_owned()))
        }
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
        if let Err(e) = guard.conn.control("RELEASE member") {
            undo(&mut guard);
            return Err(sql_err(&e));
        }
        let (tx, rx) = oneshot::channel();
        guard.waiting.push(Box::new(move |committed| {
            let _ = tx.send(committed);
        }));
        if guard.waiting.len() >= MAX_MEMBERS {
            commit_group(&mut guard);
        } else {
            drop(guard);
            if self.group.send(Wake::Commit).is_err() {
                return Err(stopped());
            }
        }
        rx.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// Undoes the member's writes; the group goes on.
    pub(crate) fn rollback(mut self) {
        if let Some(mut guard) = self.guard.take() {
            undo(&mut guard);
        }
    }
}

/// Rolls back to the open savepoint and leaves it; a group that nobody waits for is rolled back
/// whole.
fn undo(w: &mut Writer) {
    w.conn.forget_heads();
    let undone = w.conn.control("ROLLBACK TO member").and_then(|()| w.conn.control("RELEASE member"));
    if undone.is_err() || w.waiting.is_empty() {
        w.open = false;
        if w.conn.get().is_ok_and(|c| !c.is_autocommit()) {
            let _ = w.conn.control("ROLLBACK");
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::unreachable)]
mod tests {
    use std::sync::mpsc::{Receiver, channel};

    use super::*;
    use crate::store::rows::Columns;

    /// A writer on a fresh in-memory database with one table, its group open.
    fn writer() -> Writer {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let mut w = Writer { conn: SqliteConn::new(conn).unwrap(), waiting: Vec::new(), open: false };
        open_group(&mut w).unwrap();
        w
    }

    /// A job's statements, inserting `x` (unless `None`) and then keeping them, undoing them or
    /// (`fail`) failing; and what its caller is told (as [`GroupWriter::submit`] tells it).
    fn job(x: Option<i64>, keep: bool, fail: bool) -> (Statements, Receiver<StoreResult<()>>) {
        let (tx, rx) = channel();
        let statements: Statements = Box::new(move |conn: &mut SqliteConn| {
            if let Some(x) = x {
                conn.execute_once("INSERT INTO t (x) VALUES (?)", &[crate::store::sql::Arg::Int(x)]).unwrap();
            }
            let keep = keep && !fail;
            let finish: Finish = Box::new(move |committed| {
                let told = match (fail, keep) {
                    (true, _) => Err(StoreError::Corrupt("the job failed".to_owned())),
                    (false, true) => committed,
                    (false, false) => Ok(()),
                };
                tx.send(told).unwrap();
            });
            (keep, finish)
        });
        (statements, rx)
    }

    fn rows(w: &Writer) -> Vec<i64> {
        let rows = w.conn.query_once("SELECT x FROM t ORDER BY x", &[], 100).unwrap();
        rows.iter().map(|r| r.int("x").unwrap()).collect()
    }

    #[test]
    fn a_bare_job_that_undoes_having_written_nothing_leaves_its_group_whole() {
        let mut w = writer();
        let (first, kept) = job(Some(1), true, false);
        run_bare(&mut w, first);
        let (second, refused) = job(None, false, false);
        run_bare(&mut w, second);
        assert!(w.open, "the group goes on");
        commit_group(&mut w);
        assert!(kept.recv().unwrap().is_ok());
        assert!(refused.recv().unwrap().is_ok());
        assert_eq!(rows(&w), vec![1]);
    }

    #[test]
    fn a_bare_job_that_wrote_and_then_failed_takes_its_whole_group_and_everyone_is_told() {
        let mut w = writer();
        let (first, kept) = job(Some(1), true, false);
        run_bare(&mut w, first);
        let (second, failed) = job(Some(2), true, true);
        run_bare(&mut w, second);
        // Rolled back at once: the earlier member is told, nothing either wrote is kept.
        assert!(!w.open);
        assert!(matches!(kept.recv().unwrap(), Err(StoreError::Unavailable(_))));
        assert!(failed.recv().unwrap().is_err());
        assert_eq!(rows(&w), Vec::<i64>::new());
        // The next group works.
        open_group(&mut w).unwrap();
        let (third, later) = job(Some(3), true, false);
        run_bare(&mut w, third);
        commit_group(&mut w);
        assert!(later.recv().unwrap().is_ok());
        assert_eq!(rows(&w), vec![3]);
    }

    #[test]
    fn a_job_in_a_savepoint_that_undoes_its_writes_leaves_the_others_kept() {
        let mut w = writer();
        let (first, kept) = job(Some(1), true, false);
        run_bare(&mut w, first);
        let (second, undone) = job(Some(2), false, false);
        run(&mut w, Queued { statements: second, savepoint: true });
        assert!(w.open);
        commit_group(&mut w);
        assert!(kept.recv().unwrap().is_ok());
        assert!(undone.recv().unwrap().is_ok());
        assert_eq!(rows(&w), vec![1]);
    }
}
