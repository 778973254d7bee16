//! The stores' invariants of issue 19, on every backend: no state change without its audit
//! event (a store whose audit insert fails changes nothing and answers an error), one pending
//! request per plan (concurrent identical requests share one, across replicas on PostgreSQL).
//!
//! A backend's audit append is broken the way a real one breaks: a trigger that aborts every
//! insert into `audit_events` on SQLite and PostgreSQL, the injected fault on the memory store.

use std::sync::Arc;

use anyhow::{Context, ensure};
use bridle_core::approval::ApprovalStatus;
use bridle_core::audit::{AuditRecord, EventKind, verify_chain};
use bridle_core::feedback::{Feedback, Source};
use bridle_core::history::{ActionRecord, Outcome, OutcomeSource, Rating};
use bridle_core::job::JobStatus;
use bridle_core::kill::{KillScope, KillSwitch};
use bridle_core::models::{ModelEntry, Stage};
use bridle_core::ports::Created;
use bridle_runtime::store::{MemoryStore, Stores};
use serde_json::json;
use sqlx::{PgPool, SqlitePool};
use tempfile::TempDir;

use super::{T0, consume, decision, granted, job, plan, record, request, secs};

/// How a test makes a backend's audit inserts fail.
pub(super) enum Breaker {
    Memory(Arc<MemoryStore>),
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Breaker {
    /// From now on every audit insert fails.
    pub(super) async fn break_audit(&self) -> anyhow::Result<()> {
        match self {
            Breaker::Memory(m) => m.fail_audit_appends(true),
            Breaker::Sqlite(raw) => {
                sqlx::query(
                    "CREATE TRIGGER audit_refused BEFORE INSERT ON audit_events
                     BEGIN SELECT RAISE(ABORT, 'audit insert refused'); END",
                )
                .execute(raw)
                .await?;
            }
            Breaker::Postgres(raw) => {
                sqlx::raw_sql(
                    "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS
                         $$ BEGIN RAISE EXCEPTION 'audit insert refused'; END $$;
                     CREATE TRIGGER audit_refused BEFORE INSERT ON audit_events
                         FOR EACH STATEMENT EXECUTE FUNCTION refuse_audit();",
                )
                .execute(raw)
                .await?;
            }
        }
        Ok(())
    }
}

/// Runs each `async fn(Stores, Breaker)` on the memory store, an SQLite file and PostgreSQL
/// (in a fresh schema; a skip without `BRIDLE_TEST_POSTGRES_URL`).
macro_rules! with_breaker {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn memory() -> anyhow::Result<()> {
                let m = Arc::new(MemoryStore::new());
                super::$name(Stores::from_backend(m.clone(), "memory"), Breaker::Memory(m)).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite_file() -> anyhow::Result<()> {
                let dir = TempDir::new()?;
                let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
                let stores = Stores::open(&url).await?;
                let raw = SqlitePool::connect(&url).await?;
                super::$name(stores, Breaker::Sqlite(raw)).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() -> anyhow::Result<()> {
                super::super::postgres::in_schema(|s, raw| super::$name(s, Breaker::Postgres(raw))).await
            }
        }
    )*};
}

with_breaker!(a_failed_audit_append_rolls_back_every_state_change);

/// One audit record of `kind` in `tenant`.
fn event(kind: EventKind, tenant: &str) -> Vec<AuditRecord> {
    let mut r = record(tenant, 1);
    r.kind = kind;
    vec![r]
}

fn switch(scope: KillScope) -> KillSwitch {
    KillSwitch { scope, reason: "stop".into(), set_by: "ops".into(), set_at: secs(1) }
}

/// Every state-changing port method, with its audit records, against a backend whose audit
/// insert fails: each one fails, and nothing it would have changed is stored.
async fn a_failed_audit_append_rolls_back_every_state_change(s: Stores, breaker: Breaker) -> anyhow::Result<()> {
    let t = "tenant-a";
    let (p, p2, p3) = (plan(t, 3), plan(t, 4), plan(t, 5));
    // Before the fault: a granted approval, a pending request, a dispatched job, a switch that
    // is on, an executed action, a model and a decision to rate.
    let g = granted(&s, "a-granted", &p, T0).await?;
    s.approvals.create_request(&request("a-pending", &p2, T0)?, Vec::new()).await?;
    let mut dispatched = job("j-1", &p, None, None, T0)?;
    dispatched.status = JobStatus::Dispatched;
    s.jobs.reserve(&dispatched, None, Vec::new()).await?;
    s.kills.set_kill(&switch(KillScope::tenant("tenant-b")), Vec::new()).await?;
    let action = ActionRecord {
        tenant: t.into(),
        job_id: "j-1".into(),
        tool: "scale_replicas".into(),
        diagnosis: "d".into(),
        equipment_class: "c".into(),
        equipment: "e".into(),
        executed_at: secs(1),
        rating: None,
    };
    s.history.record_action(&action).await?;
    let model = ModelEntry {
        tenant: t.into(),
        name: "m".into(),
        config_path: "m.toml".into(),
        config_hash: "h".into(),
        stage: Stage::Candidate,
        registered_by: "ops".into(),
        registered_at: T0,
        updated_at: T0,
        validation: None,
    };
    s.models.register_model(&model).await?;
    let decision = decision("d-1", t, secs(1));
    s.decisions.record(&decision).await?;
    s.audit.append(event(EventKind::ToolCall, t)).await?;
    let before = s.audit.events(t, 0, 1000).await?;

    breaker.break_audit().await?;
    let failed = |what: &str, r: &dyn std::fmt::Debug, ok: bool| -> anyhow::Result<()> {
        ensure!(ok, "{what}: expected a store error, got {r:?}");
        Ok(())
    };
    // Approval requested.
    let created =
        s.approvals.create_request(&request("a-new", &p3, secs(2))?, event(EventKind::ApprovalRequested, t)).await;
    failed("create_request", &created, created.is_err())?;
    ensure!(s.approvals.get_request(t, "a-new").await?.is_none(), "the request was stored without its event");
    // Granted, rejected.
    let grant = bridle_core::approval::Grant { approver: "operator-2".into(), sign_off: false, at: secs(2) };
    let added = s.approvals.add_grant(t, "a-pending", 0, &grant, true, event(EventKind::ApprovalGranted, t)).await;
    failed("add_grant", &added, added.is_err())?;
    let rejected =
        s.approvals.reject_request(t, "a-pending", "operator-2", "no", event(EventKind::ApprovalRejected, t)).await;
    failed("reject_request", &rejected, rejected.is_err())?;
    let pending = s.approvals.get_request(t, "a-pending").await?.context("stored")?;
    ensure!(pending.status == ApprovalStatus::Pending && pending.grants.is_empty(), "{pending:?}");
    // Consumed with a job reserved (and dispatched).
    let mut j2 = job("j-2", &p, Some("k-2"), Some("a-granted"), secs(3))?;
    j2.status = JobStatus::Dispatched;
    let reserved =
        s.jobs.reserve(&j2, Some(&consume("a-granted", &p, secs(3))?), event(EventKind::JobDispatched, t)).await;
    failed("reserve", &reserved, reserved.is_err())?;
    ensure!(s.jobs.get_job("j-2").await?.is_none(), "the job was stored without its event");
    ensure!(s.jobs.find_by_key(t, "requester-1", "k-2").await?.is_none(), "the key was claimed");
    ensure!(s.approvals.get_request(t, "a-granted").await? == Some(g), "the approval was consumed");
    // Settled.
    let moved = s
        .jobs
        .transition(
            "j-1",
            JobStatus::Dispatched,
            JobStatus::Succeeded,
            Some(bridle_core::job::StoredOutcome::of(&json!({"ok": 1}))),
            secs(4),
            event(EventKind::ToolCall, t),
        )
        .await;
    failed("transition", &moved, moved.is_err())?;
    let j1 = s.jobs.get_job("j-1").await?.context("stored")?;
    ensure!(j1.status == JobStatus::Dispatched && j1.outcome.is_none(), "{j1:?}");
    // Kill switch set, lifted.
    let set = s.kills.set_kill(&switch(KillScope::tenant(t)), event(EventKind::KillSwitchSet, t)).await;
    failed("set_kill", &set, set.is_err())?;
    let lifted = s.kills.lift_kill(&KillScope::tenant("tenant-b"), event(EventKind::KillSwitchLifted, t)).await;
    failed("lift_kill", &lifted, lifted.is_err())?;
    let active: Vec<KillScope> = s.kills.active_kills().await?.into_iter().map(|k| k.scope).collect();
    ensure!(active == [KillScope::tenant("tenant-b")], "{active:?}");
    // An action's outcome, a promotion, feedback.
    let rating = Rating {
        outcome: Outcome::Success,
        source: OutcomeSource::Operator,
        rated_by: "ops".into(),
        note: None,
        rated_at: secs(5),
    };
    let rated = s.history.rate_action(t, "j-1", &rating, &|_| event(EventKind::ActionOutcome, t)).await;
    failed("rate_action", &rated, rated.is_err())?;
    let history = s.history.action_history(t, "scale_replicas", "d", "c", T0).await?;
    ensure!(history.iter().all(|a| a.rating.is_none()), "{history:?}");
    let promoted = ModelEntry { stage: Stage::Canary, ..model.clone() };
    let staged = s.models.move_stage(&promoted, Stage::Candidate, event(EventKind::ModelPromoted, t)).await;
    failed("move_stage", &staged, staged.is_err())?;
    ensure!(s.models.model(t, "m").await?.map(|m| m.stage) == Some(Stage::Candidate));
    let feedback = Feedback {
        feedback_id: "f-1".into(),
        tenant: t.into(),
        decision_id: decision.decision_id.clone(),
        source: Source::Operator,
        rating: Some(4),
        score: None,
        comment: None,
        rater: "ops".into(),
        created_at: secs(6),
    };
    let added = s.feedback.add_feedback(&feedback, event(EventKind::FeedbackCollected, t)).await;
    failed("add_feedback", &added, added.is_err())?;
    ensure!(s.feedback.feedback(t, None, 10).await?.is_empty(), "feedback was stored without its event");
    // And the chain is exactly what it was, intact.
    let after = s.audit.events(t, 0, 1000).await?;
    ensure!(after == before, "the audit log changed: {} → {} events", before.len(), after.len());
    verify_chain(t, &after).map_err(|b| anyhow::anyhow!("{b:?}"))?;
    Ok(())
}

// ---- one pending request per plan ----

/// 32 concurrent requests for one plan, each with its own id: exactly one is stored (with its
/// event), every caller gets that one back, and the plan has one pending request.
pub(super) async fn concurrent_requests_for_one_plan_share_one_pending_request(s: Stores) -> anyhow::Result<()> {
    let t = "tenant-a";
    let p = plan(t, 3);
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let s = s.clone();
            let r = request(&format!("a-{i:02}"), &p, secs(1));
            tokio::spawn(async move {
                let r = r?;
                let mut e = record(&r.tenant, 1);
                e.kind = EventKind::ApprovalRequested;
                e.call_id.clone_from(&r.id);
                let created = s.approvals.create_request(&r, vec![e]).await?;
                Ok::<_, anyhow::Error>((r.id, created))
            })
        })
        .collect();
    let (mut new, mut existing) = (Vec::new(), Vec::new());
    for task in tasks {
        match task.await?? {
            (id, Created::New) => new.push(id),
            (_, Created::Existing(r)) => existing.push(r.id),
        }
    }
    ensure!(new.len() == 1, "created {new:?}");
    let winner = new.first().context("one")?;
    ensure!(existing.len() == 31 && existing.iter().all(|id| id == winner), "{existing:?}");
    let pending = s.approvals.list_pending(t, secs(2)).await?;
    ensure!(pending.len() == 1 && &pending[0].id == winner, "{pending:?}");
    let requested: Vec<_> = s.audit.events(t, 0, 100).await?.into_iter().map(|e| e.record.call_id).collect();
    ensure!(requested == [winner.clone()], "one approval_requested event: {requested:?}");
    // Once it is decided (or expired), the plan can get a new pending request.
    s.approvals.reject_request(t, winner, "operator-2", "no", Vec::new()).await?;
    ensure!(s.approvals.create_request(&request("a-next", &p, secs(3))?, Vec::new()).await? == Created::New);
    let mut late = request("a-late", &p, secs(3) + time::Duration::minutes(6))?;
    late.expires_at = late.created_at + time::Duration::minutes(5);
    ensure!(s.approvals.create_request(&late, Vec::new()).await? == Created::New, "an expired one is moved aside");
    Ok(())
}

/// Two replicas (two pools on one PostgreSQL database) race 32 requests for one plan: one
/// pending request, and every caller on either replica gets its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_one_pending_request_per_plan() -> anyhow::Result<()> {
    let Some(url) = crate::suite::support::postgres_url() else { return Ok(()) };
    let admin = PgPool::connect(&url).await?;
    let schema = format!("bridle_test_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await?;
    let scoped = super::postgres::scoped(&url, &schema);
    let outcome = async {
        let a = bridle_runtime::store::PostgresStore::open_with_connections(&scoped, 4).await?;
        let b = bridle_runtime::store::PostgresStore::open_with_connections(&scoped, 4).await?;
        let replicas = [Stores::from_backend(Arc::new(a.clone()), "a"), Stores::from_backend(Arc::new(b.clone()), "b")];
        let p = plan("tenant-a", 3);
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let s = replicas[i % 2].clone();
                let r = request(&format!("a-{i:02}"), &p, secs(1));
                tokio::spawn(async move { Ok::<_, anyhow::Error>(s.approvals.create_request(&r?, Vec::new()).await?) })
            })
            .collect();
        let mut ids = Vec::new();
        let mut new = 0;
        for t in tasks {
            match t.await?? {
                Created::New => new += 1,
                Created::Existing(r) => ids.push(r.id),
            }
        }
        let pending = replicas[1].approvals.list_pending("tenant-a", secs(2)).await?;
        a.close().await;
        b.close().await;
        ensure!(new == 1 && pending.len() == 1, "new {new}, pending {pending:?}");
        ensure!(ids.iter().all(|id| *id == pending[0].id), "{ids:?}");
        Ok::<_, anyhow::Error>(())
    }
    .await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await?;
    outcome
}
