//! PostgreSQL-only store properties: what several replicas sharing one database rely on, and
//! what only a database shows (tampered and undecodable rows, integer limits).
//!
//! Each "replica" is its own `PostgresStore` (its own connection pool) on a schema the replicas
//! of one test share (fresh per test, dropped afterwards, never the database's `public` schema,
//! which other builds' test runs migrate their own way), working in fresh uuid tenants.
//! Tests that break rows on purpose, and every contract test (`in_fresh_schema`), run in a
//! fresh schema dropped afterwards, so nothing broken or left over stays in the shared one.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use anyhow::{Context, ensure};
use bridle_core::Code;
use bridle_core::approval::ApprovalStatus;
use bridle_core::audit::{AuditEvent, verify_chain};
use bridle_core::ports::{BudgetKind, Debit, Reserved, StoreError};
use bridle_runtime::store::{PostgresStore, Stores};
use sqlx::PgPool;
use tokio::sync::Mutex;

use super::{T0, consume, granted, job, plan, record, secs};
use crate::suite::support::postgres_url;

/// Replicas (stores, each with its own pool) in the concurrency tests.
const REPLICAS: usize = 8;
/// Connections per replica: 8 × 4 = 32 concurrent transactions, well below the server's
/// default `max_connections` (100) even beside other tests.
const POOL: u32 = 4;
/// Concurrent tasks racing in each round.
const TASKS: usize = 64;

/// Serializes the tests that open [`REPLICAS`] pools, so two of them never run at once.
static MANY_POOLS: Mutex<()> = Mutex::const_new(());

/// The test URL scoped to `schema` (tables are created and found there).
pub(super) fn scoped(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options[search_path]={schema}")
}

/// Runs a contract test against a PostgreSQL store in a fresh schema, dropped afterwards even
/// when the test fails or panics. Skips (after printing why) when no URL is configured.
pub(super) async fn in_fresh_schema<F, Fut>(test: F) -> anyhow::Result<()>
where
    F: FnOnce(Stores) -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    in_schema(|stores, _raw| test(stores)).await
}

/// [`in_fresh_schema`], also handing the test a raw pool on the schema (to edit rows behind the
/// store's back without leaving broken rows in the shared schema).
pub(super) async fn in_schema<F, Fut>(test: F) -> anyhow::Result<()>
where
    F: FnOnce(Stores, PgPool) -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let Some(url) = postgres_url() else { return Ok(()) };
    let admin = PgPool::connect(&url).await?;
    let schema = format!("bridle_test_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await?;
    let url = scoped(&url, &schema);
    let outcome = match PostgresStore::open_with_connections(&url, POOL).await {
        Ok(store) => {
            let stores = Stores::from_backend(Arc::new(store.clone()), "postgres");
            let outcome = match PgPool::connect(&url).await {
                Ok(raw) => tokio::spawn(test(stores, raw)).await,
                Err(e) => Ok(Err(e.into())),
            };
            store.close().await;
            outcome
        }
        Err(e) => Ok(Err(e.into())),
    };
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await?;
    match outcome {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(e.into()),
    }
}

/// [`REPLICAS`] stores on the shared schema, a raw pool for checks, and a fresh tenant.
struct Replicas {
    stores: Vec<Stores>,
    backends: Vec<PostgresStore>,
    raw: PgPool,
    tenant: String,
    /// The schema of their own, and a connection outside it to drop it.
    schema: String,
    admin: PgPool,
}

impl Replicas {
    /// [`REPLICAS`] stores on a fresh schema (dropped by [`Replicas::close`]): the database's
    /// `public` schema is shared with other builds' test runs, whose migrations may differ.
    async fn open(url: &str) -> anyhow::Result<Self> {
        let admin = PgPool::connect(url).await?;
        let schema = format!("bridle_replicas_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await?;
        let url = scoped(url, &schema);
        let mut stores = Vec::with_capacity(REPLICAS);
        let mut backends = Vec::with_capacity(REPLICAS);
        for _ in 0..REPLICAS {
            let store = PostgresStore::open_with_connections(&url, POOL).await?;
            stores.push(Stores::from_backend(Arc::new(store.clone()), "postgres"));
            backends.push(store);
        }
        let raw = PgPool::connect(&url).await?;
        Ok(Self { stores, backends, raw, tenant: format!("tenant-{}", uuid::Uuid::new_v4()), schema, admin })
    }

    /// The store task `i` uses: tasks spread round-robin over the replicas.
    fn of(&self, i: usize) -> anyhow::Result<Stores> {
        self.stores.get(i % REPLICAS).cloned().context("a replica")
    }

    async fn close(self) {
        for b in &self.backends {
            b.close().await;
        }
        self.raw.close().await;
        let _ = sqlx::query(&format!("DROP SCHEMA {} CASCADE", self.schema)).execute(&self.admin).await;
        self.admin.close().await;
    }
}

/// 64 tasks on 8 pools race to reserve a job with one approval, 50 rounds. Tasks share an
/// idempotency key in groups of 8, so key claims race too. Each round: exactly one job is
/// reserved and consumed the approval; every other task lost to it (`approval_replayed`) or
/// found its key taken by the winner's job; nothing else was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_many_replicas_consume_an_approval_exactly_once() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let _one_at_a_time = MANY_POOLS.lock().await;
    let r = Replicas::open(&url).await?;
    let p = plan(&r.tenant, 3);
    let now = secs(10);
    for round in 0..50 {
        let approval = format!("{}-a-{round}", r.tenant);
        granted(&r.of(round)?, &approval, &p, T0).await?;
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let s = r.of(i);
                let id = format!("{}-j-{round}-{i}", r.tenant);
                let j = job(&id, &p, Some(&format!("k-{round}-{}", i % 8)), Some(&approval), now);
                let c = consume(&approval, &p, now);
                tokio::spawn(async move {
                    let (s, j, c) = (s?, j?, c?);
                    Ok::<_, anyhow::Error>((j.id.clone(), s.jobs.reserve(&j, Some(&c), Vec::new()).await?))
                })
            })
            .collect();
        let mut winners = Vec::new();
        let mut outcomes = BTreeMap::new();
        let mut key_holders = Vec::new();
        for t in tasks {
            let (id, got) = t.await??;
            match got {
                Reserved::Reserved => winners.push(id),
                Reserved::ApprovalRefused(why) => *outcomes.entry(why.code.as_str()).or_insert(0) += 1,
                Reserved::KeyTaken(holder) => key_holders.push(holder.id),
            }
        }
        ensure!(winners.len() == 1, "round {round}: winners {winners:?}");
        let winner = winners.first().context("a winner")?;
        ensure!(key_holders.iter().all(|h| h == winner), "round {round}: keys held by {key_holders:?}");
        ensure!(outcomes.keys().all(|c| *c == Code::ApprovalReplayed.as_str()), "round {round}: {outcomes:?}");
        ensure!(outcomes.values().sum::<usize>() + key_holders.len() == TASKS - 1, "round {round}");
        let a = r.of(0)?.approvals.get_request(&r.tenant, &approval).await?.context("stored")?;
        ensure!(a.status == ApprovalStatus::Consumed && a.consumed_by.as_ref() == Some(winner), "round {round}");
        let jobs: Vec<String> =
            sqlx::query_scalar("SELECT id FROM jobs WHERE approval_id = $1").bind(&approval).fetch_all(&r.raw).await?;
        ensure!(jobs == [winner.clone()], "round {round}: stored jobs {jobs:?}");
    }
    r.close().await;
    Ok(())
}

/// 64 tasks on 8 pools debit 1–3 units each from one counter with a limit that cannot cover
/// them all, 10 rounds: the accepted debits sum to exactly the counter, which never passes the
/// limit, and every refusal saw a counter with too little headroom.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_many_replicas_never_debit_past_the_limit() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let _one_at_a_time = MANY_POOLS.lock().await;
    let r = Replicas::open(&url).await?;
    const LIMIT: u64 = 97;
    for round in 0..10 {
        let run = format!("run-{round}");
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let s = r.of(i);
                let (tenant, run) = (r.tenant.clone(), run.clone());
                let amount = u64::try_from(i % 3 + 1).unwrap_or(1);
                tokio::spawn(async move {
                    let debit = s?.budgets.debit(&tenant, &run, BudgetKind::Tokens, amount, LIMIT).await?;
                    Ok::<_, anyhow::Error>((amount, debit))
                })
            })
            .collect();
        let (mut accepted, mut totals) = (0, Vec::new());
        for t in tasks {
            match t.await?? {
                (amount, Debit::Accepted { used }) => {
                    accepted += amount;
                    totals.push(used);
                }
                (amount, Debit::Exhausted { used }) => ensure!(used + amount > LIMIT, "refused {amount} at {used}"),
            }
        }
        let used = r.of(round)?.budgets.used(&r.tenant, &run, BudgetKind::Tokens).await?;
        ensure!(used == accepted && used <= LIMIT, "round {round}: used {used}, accepted {accepted}");
        // Each accepted debit saw its own total: the counter moved through distinct values.
        let accepted_debits = totals.len();
        totals.sort_unstable();
        totals.dedup();
        ensure!(totals.len() == accepted_debits && totals.last() == Some(&used), "round {round}: {totals:?}");
    }
    r.close().await;
    Ok(())
}

/// 64 tasks on 8 pools (half of them group-committing through `with_batched_audit`) append
/// batches that mix two tenants: each tenant keeps one linear chain that verifies, with every
/// appended event at its returned seq.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_many_replicas_keep_one_audit_chain_per_tenant() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let _one_at_a_time = MANY_POOLS.lock().await;
    let r = Replicas::open(&url).await?;
    let tenants = [r.tenant.clone(), format!("{}-b", r.tenant)];
    let writers: Vec<Stores> = r
        .stores
        .iter()
        .enumerate()
        .map(|(i, s)| if i % 2 == 0 { s.clone() } else { s.clone().with_batched_audit(16) })
        .collect();
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let s = writers.get(i % REPLICAS).cloned();
            let tenants = tenants.clone();
            tokio::spawn(async move {
                let s = s.context("a writer")?;
                let mut appended = Vec::new();
                for n in 0..4_u64 {
                    let batch = (0..=n % 3)
                        .map(|k| record(&tenants[(i + usize::try_from(n + k).unwrap_or(0)) % 2], n * 10 + k))
                        .collect();
                    appended.extend(s.audit.append(batch).await?);
                }
                Ok::<_, anyhow::Error>(appended)
            })
        })
        .collect();
    let mut appended: BTreeMap<String, Vec<AuditEvent>> = BTreeMap::new();
    for t in tasks {
        for e in t.await?? {
            appended.entry(e.record.tenant.clone()).or_default().push(e);
        }
    }
    for tenant in &tenants {
        let mut expected = appended.remove(tenant).unwrap_or_default();
        expected.sort_by_key(|e| e.seq);
        let stored = r.of(0)?.audit.events(tenant, 0, 100_000).await?;
        let verified = verify_chain(tenant, &stored).map_err(|b| anyhow::anyhow!("{tenant}: {b:?}"))?;
        ensure!(verified == stored.len() as u64 && !stored.is_empty(), "{tenant}: {verified} of {}", stored.len());
        ensure!(stored == expected, "{tenant}: the stored chain differs from the appended events");
    }
    r.close().await;
    Ok(())
}

/// `Stores::open` takes both URL schemes, keeps the password out of `url`, and what one store
/// writes another opened on the same database reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_urls_open_every_port_on_one_shared_database() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let a = Stores::open(&url).await?;
    let other_scheme = url.replacen("postgres://", "postgresql://", 1);
    let b = Stores::open(&other_scheme).await?;
    ensure!(a.url == url, "a URL without a password is kept as it is: {}", a.url);
    let tenant = format!("tenant-{}", uuid::Uuid::new_v4());
    let p = plan(&tenant, 3);
    let approval = format!("{tenant}-a-1");
    granted(&a, &approval, &p, T0).await?;
    let j = job(&format!("{tenant}-j-1"), &p, Some("k-1"), Some(&approval), secs(5))?;
    ensure!(b.jobs.reserve(&j, Some(&consume(&approval, &p, secs(5))?), Vec::new()).await? == Reserved::Reserved);
    ensure!(a.jobs.find_by_key(&tenant, "requester-1", "k-1").await? == Some(j.clone()));
    let mark = |reason| bridle_core::ports::TaintMark { tenant: &tenant, run_id: "run-1", actor: None, reason, at: T0 };
    a.run_flags.taint(&mark("first")).await?;
    b.run_flags.taint(&mark("second")).await?;
    ensure!(b.run_flags.run_taint(&tenant, "run-1").await?.as_deref() == Some("first"));
    ensure!(a.budgets.debit(&tenant, "run-1", BudgetKind::Calls, 2, 3).await? == Debit::Accepted { used: 2 });
    ensure!(b.budgets.debit(&tenant, "run-1", BudgetKind::Calls, 2, 3).await? == Debit::Exhausted { used: 2 });
    a.decisions.record(&super::decision(&format!("{tenant}-d-1"), &tenant, secs(1))).await?;
    let dup = b.decisions.record(&super::decision(&format!("{tenant}-d-1"), &tenant, secs(2))).await;
    ensure!(matches!(dup, Err(StoreError::Duplicate(_))), "{dup:?}");
    ensure!(b.decisions.recent(&tenant, 5).await?.len() == 1);
    Ok(())
}

#[tokio::test]
async fn postgres_connection_errors_never_show_the_password() {
    // An unreachable server: opening fails, and the message names the URL without its password.
    let err = Stores::open("postgres://bridle:s3cret@127.0.0.1:1/bridle").await.err();
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("postgres://bridle:***@127.0.0.1:1/bridle"), "{message}");
    assert!(!message.contains("s3cret"), "{message}");
}

/// A store on the shared schema and a fresh tenant.
async fn shared(url: &str) -> anyhow::Result<(PostgresStore, Stores, String)> {
    let store = PostgresStore::open_with_connections(url, POOL).await?;
    let stores = Stores::from_backend(Arc::new(store.clone()), "postgres");
    Ok((store, stores, format!("tenant-{}", uuid::Uuid::new_v4())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_tampered_audit_row_is_caught_at_its_seq() -> anyhow::Result<()> {
    in_schema(tampered_audit_rows_are_caught_at_their_seq).await
}

async fn tampered_audit_rows_are_caught_at_their_seq(s: Stores, raw: PgPool) -> anyhow::Result<()> {
    let [a, b, c] = ["tenant-a", "tenant-b", "tenant-c"];
    let records = [a, b, c].into_iter().flat_map(|t| (0..6).map(move |i| record(t, i))).collect();
    s.audit.append(records).await?;
    for (sql, t) in [
        ("UPDATE audit_events SET code = 'ok' WHERE tenant = $1 AND seq = 3", a),
        ("DELETE FROM audit_events WHERE tenant = $1 AND seq = 2", b),
        ("UPDATE audit_events SET at = at + 1 WHERE tenant = $1 AND seq = 5", c),
    ] {
        ensure!(sqlx::query(sql).bind(t).execute(&raw).await?.rows_affected() == 1, "{sql}");
    }
    for (t, seq) in [(a, 3), (b, 2), (c, 5)] {
        let events = s.audit.events(t, 0, 100).await?;
        ensure!(verify_chain(t, &events).err().map(|e| e.seq) == Some(seq), "{t} should break at {seq}");
    }
    Ok(())
}

/// An auditor's role (`SELECT` only, its sessions read-only) opens a store whose schema is
/// current and reads the log and its heads: opening runs no DDL, and the flush that guards what
/// leaves the store waits for the WAL writer instead of writing. Its append is refused. (Not in
/// [`in_schema`]: opening a store is not a `Send` future, and that runs the test on a task.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_read_only_role_reads_the_audit_log_and_its_heads() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let admin = PgPool::connect(&url).await?;
    let id = uuid::Uuid::new_v4().simple();
    let (schema, role) = (format!("bridle_test_{id}"), format!("bridle_auditor_{id}"));
    sqlx::raw_sql(&format!("CREATE SCHEMA {schema}")).execute(&admin).await?;
    let outcome = a_read_only_role_reads_the_log(&admin, &url, &schema, &role).await;
    sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await?;
    let exists = sqlx::query("SELECT 1 FROM pg_roles WHERE rolname = $1").bind(&role).fetch_optional(&admin).await?;
    if exists.is_some() {
        sqlx::raw_sql(&format!("DROP OWNED BY {role}; DROP ROLE {role}")).execute(&admin).await?;
    }
    outcome
}

async fn a_read_only_role_reads_the_log(admin: &PgPool, url: &str, schema: &str, role: &str) -> anyhow::Result<()> {
    let owner = PostgresStore::open_with_connections(&scoped(url, schema), POOL).await?;
    let tenant = format!("tenant-{}", uuid::Uuid::new_v4());
    let written = Stores::from_backend(Arc::new(owner.clone()), "postgres")
        .audit
        .append((0..5).map(|i| record(&tenant, i)).collect())
        .await?;
    owner.close().await;
    let grant = format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'auditor';
         ALTER ROLE {role} SET default_transaction_read_only = on;
         GRANT USAGE ON SCHEMA {schema} TO {role};
         GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role};"
    );
    sqlx::raw_sql(&grant).execute(admin).await?;
    read_as_auditor(&scoped(&as_user(url, role, "auditor"), schema), &tenant, &written).await
}

async fn read_as_auditor(url: &str, tenant: &str, written: &[AuditEvent]) -> anyhow::Result<()> {
    let store = PostgresStore::open_with_connections(url, 2).await.context("the auditor opens the store")?;
    let auditor = Stores::from_backend(Arc::new(store.clone()), "postgres");
    let checks = async {
        ensure!(auditor.audit.events(tenant, 0, 100).await? == written, "the auditor reads the events written");
        let last = written.last().context("events were written")?;
        let heads = auditor.audit.heads().await?;
        let head = heads.iter().find(|h| h.tenant == tenant).context("the tenant's head")?;
        ensure!((head.seq, head.hash.as_str()) == (last.seq, last.hash.as_str()), "{head:?}");
        ensure!(auditor.audit.append(vec![record(tenant, 9)]).await.is_err(), "the auditor appended");
        Ok(())
    }
    .await;
    store.close().await;
    checks
}

/// `url` signing in as `user` with `password`.
fn as_user(url: &str, user: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{user}:{password}@{host}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_undecodable_rows_are_corrupt() -> anyhow::Result<()> {
    in_schema(undecodable_rows_are_corrupt).await
}

async fn undecodable_rows_are_corrupt(s: Stores, raw: PgPool) -> anyhow::Result<()> {
    let tenant = "tenant-a";
    let p = plan(tenant, 3);
    let (job_id, approval) = (format!("{tenant}-j-1"), format!("{tenant}-a-1"));
    ensure!(s.jobs.reserve(&job(&job_id, &p, None, None, T0)?, None, Vec::new()).await? == Reserved::Reserved);
    granted(&s, &approval, &p, T0).await?;
    sqlx::query("UPDATE jobs SET status = 'exploded' WHERE id = $1").bind(&job_id).execute(&raw).await?;
    sqlx::query("UPDATE approvals SET grants = '[{\"approver\": 1}]' WHERE id = $1")
        .bind(&approval)
        .execute(&raw)
        .await?;
    let j = s.jobs.get_job(&job_id).await;
    ensure!(matches!(j, Err(StoreError::Corrupt(_))), "{j:?}");
    let r = s.approvals.get_request(tenant, &approval).await;
    ensure!(matches!(r, Err(StoreError::Corrupt(_))), "{r:?}");
    let unsettled = s.jobs.unsettled().await;
    ensure!(matches!(unsettled, Err(StoreError::Corrupt(_))), "{unsettled:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_counts_past_i64_are_refused_never_wrapped() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let (store, s, tenant) = shared(&url).await?;
    let err = s.budgets.debit(&tenant, "run-1", BudgetKind::Cost, u64::MAX - 1, u64::MAX).await;
    ensure!(matches!(err, Err(StoreError::Unavailable(_))), "{err:?}");
    let max = i64::MAX.unsigned_abs();
    ensure!(s.budgets.debit(&tenant, "run-1", BudgetKind::Cost, max, u64::MAX).await? == Debit::Accepted { used: max });
    // The counter is full: one more fits the limit but not the column.
    let err = s.budgets.debit(&tenant, "run-1", BudgetKind::Cost, 1, u64::MAX).await;
    ensure!(matches!(err, Err(StoreError::Unavailable(_))), "{err:?}");
    ensure!(s.budgets.debit(&tenant, "run-1", BudgetKind::Cost, 1, max).await? == Debit::Exhausted { used: max });
    let mut d = super::decision(&format!("{tenant}-d-1"), &tenant, secs(1));
    d.prompt_tokens = u64::MAX;
    let err = s.decisions.record(&d).await;
    ensure!(matches!(err, Err(StoreError::Unavailable(_))), "{err:?}");
    ensure!(s.decisions.recent(&tenant, 10).await?.is_empty());
    store.close().await;
    Ok(())
}
