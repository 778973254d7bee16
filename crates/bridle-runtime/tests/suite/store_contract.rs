//! The store contract: each port behaviour written once and run against every backend
//! (`memory`, an SQLite file in a temporary directory, `sqlite::memory:`, and PostgreSQL when
//! `BRIDLE_TEST_POSTGRES_URL` is set).
//!
//! On PostgreSQL each test runs in a fresh schema of the shared database (dropped afterwards),
//! so the same tests, with the same tenants and ids, run in parallel and repeatedly without
//! colliding. SQLite-only properties (reopening, tampering, schema versions, integer limits)
//! live in `store_contract/sqlite.rs`; PostgreSQL-only ones (many pools racing, as replicas
//! do) in `store_contract/postgres.rs`.

mod actions;
mod conversations;
mod feedback;
mod gate_level;
mod governance;
mod invariants;
mod postgres;
mod sqlite;

use actions::{auto_window_slides_per_tenant_and_resource, concurrent_auto_admissions_never_pass_the_limit};
use bridle_core::agents::AgentSource;
use conversations::conversations_are_owned_continued_by_compare_and_set_bounded_and_pruned;
use feedback::{feedback_rates_decisions_of_its_own_tenant, models_move_stage_by_compare_and_set};
use gate_level::{
    keyed_retries_during_and_after_a_job_get_in_progress_then_the_result,
    racing_keyed_calls_never_get_approval_replayed,
    thirty_two_identical_calls_share_one_pending_request_and_one_webhook,
};
use governance::{
    action_history_rates_in_place_and_filters, admission_reads_the_kill_switch_and_counts_nothing_when_killed,
    admission_reads_the_taint_it_is_asked_for, kill_switches_cover_their_scope_until_lifted,
};
use invariants::concurrent_requests_for_one_plan_share_one_pending_request;

use std::collections::BTreeMap;

use anyhow::{Context, ensure};
use bridle_core::Code;
use bridle_core::approval::{ApprovalRequest, ApprovalStatus, Grant};
use bridle_core::audit::{AuditRecord, Decision, EventKind, Timings, verify_chain};
use bridle_core::contract::ApprovalLevel;
use bridle_core::decision::DecisionRecord;
use bridle_core::job::{Job, JobStatus, StoredOutcome};
use bridle_core::plan::{Plan, PlanHash};
use bridle_core::ports::{BudgetKind, Consume, Created, Debit, Reserved, StoreError};
use bridle_runtime::store::Stores;
use serde_json::json;
use tempfile::TempDir;
use time::macros::{datetime, offset};
use time::{Duration, OffsetDateTime};

/// A time with nanoseconds, to check instants round-trip exactly.
const T0: OffsetDateTime = datetime!(2026-01-01 09:30:00.123456789 UTC);

fn secs(n: i64) -> OffsetDateTime {
    T0 + Duration::seconds(n)
}

/// A backend under test; keeps its temporary directory alive.
struct Backend {
    stores: Stores,
    _dir: Option<TempDir>,
}

async fn memory() -> anyhow::Result<Backend> {
    Ok(Backend { stores: Stores::memory(), _dir: None })
}

/// An SQLite file in a directory that does not exist yet (the store creates it).
async fn sqlite_file() -> anyhow::Result<Backend> {
    let dir = TempDir::new()?;
    let url = format!("sqlite://{}", dir.path().join("nested/bridle.db").display());
    Ok(Backend { stores: Stores::open(&url).await?, _dir: Some(dir) })
}

async fn sqlite_memory() -> anyhow::Result<Backend> {
    Ok(Backend { stores: Stores::open("sqlite::memory:").await?, _dir: None })
}

/// Runs each named `async fn(Stores) -> anyhow::Result<()>` as one test per backend:
/// `<name>::memory`, `<name>::sqlite_file`, `<name>::sqlite_memory`, `<name>::postgres` (a
/// skip, after printing why, when no PostgreSQL URL is configured).
macro_rules! contract {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn memory() -> anyhow::Result<()> {
                let b = super::memory().await?;
                super::$name(b.stores.clone()).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite_file() -> anyhow::Result<()> {
                let b = super::sqlite_file().await?;
                super::$name(b.stores.clone()).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite_memory() -> anyhow::Result<()> {
                let b = super::sqlite_memory().await?;
                super::$name(b.stores.clone()).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() -> anyhow::Result<()> {
                super::postgres::in_fresh_schema(super::$name).await
            }
        }
    )*};
}

contract!(
    approval_create_get_duplicate,
    approval_find_for_plan_prefers_granted_and_skips_expired,
    approval_add_grant_is_optimistic,
    approval_reject_and_list_pending,
    reserve_claims_idempotency_keys,
    reserve_consumes_an_approval_once,
    reserve_refusal_writes_nothing,
    job_transitions_only_from_expected_state,
    unsettled_lists_non_final_jobs_oldest_first,
    budget_debits_stop_at_the_limit,
    audit_chains_per_tenant_across_batches,
    decision_log_records_newest_first,
    concurrent_reserves_consume_an_approval_once,
    concurrent_debits_never_pass_the_limit,
    auto_window_slides_per_tenant_and_resource,
    concurrent_auto_admissions_never_pass_the_limit,
    feedback_rates_decisions_of_its_own_tenant,
    models_move_stage_by_compare_and_set,
    kill_switches_cover_their_scope_until_lifted,
    admission_reads_the_kill_switch_and_counts_nothing_when_killed,
    admission_reads_the_taint_it_is_asked_for,
    action_history_rates_in_place_and_filters,
    concurrent_requests_for_one_plan_share_one_pending_request,
    thirty_two_identical_calls_share_one_pending_request_and_one_webhook,
    keyed_retries_during_and_after_a_job_get_in_progress_then_the_result,
    racing_keyed_calls_never_get_approval_replayed,
    a_migrated_store_is_ready_before_and_after_writes,
    conversations_are_owned_continued_by_compare_and_set_bounded_and_pruned,
);

mod bounds;
mod evidence;

// ---- fixtures ----

fn plan(tenant: &str, replicas: u64) -> Plan {
    Plan {
        tool: "scale_replicas".into(),
        arguments: json!({"service": "checkout", "replicas": replicas, "ratio": 0.1}),
        tenant: tenant.into(),
        subject: "requester-1".into(),
        incident: "inc-42".into(),
        run_id: "run-101".into(),
    }
}

fn hash(p: &Plan) -> anyhow::Result<PlanHash> {
    Ok(p.hash()?)
}

/// A pending request for `plan`, created at `created` and valid for 5 minutes.
fn request(id: &str, p: &Plan, created: OffsetDateTime) -> anyhow::Result<ApprovalRequest> {
    Ok(ApprovalRequest::new(
        id.into(),
        p.clone(),
        hash(p)?,
        ApprovalLevel::Approval,
        created,
        created + Duration::minutes(5),
    ))
}

fn grant(approver: &str, sign_off: bool) -> Grant {
    Grant { approver: approver.into(), sign_off, at: secs(1) }
}

/// Creates a request and grants it (one grant, level `approval`).
async fn granted(s: &Stores, id: &str, p: &Plan, created: OffsetDateTime) -> anyhow::Result<ApprovalRequest> {
    let r = request(id, p, created)?;
    s.approvals.create_request(&r, Vec::new()).await?;
    s.approvals.add_grant(&r.tenant, id, 0, &grant("operator-2", false), true, Vec::new()).await?;
    s.approvals.get_request(&r.tenant, id).await?.context("granted request is stored")
}

fn job(id: &str, p: &Plan, key: Option<&str>, approval: Option<&str>, created: OffsetDateTime) -> anyhow::Result<Job> {
    Ok(Job {
        id: id.into(),
        tenant: p.tenant.clone(),
        subject: p.subject.clone(),
        idempotency_key: key.map(str::to_owned),
        plan: p.clone(),
        plan_hash: hash(p)?,
        executor: "scaler-bot".into(),
        approval_id: approval.map(str::to_owned),
        status: JobStatus::Reserved,
        outcome: None,
        created_at: created,
        updated_at: created,
    })
}

fn consume(approval: &str, p: &Plan, now: OffsetDateTime) -> anyhow::Result<Consume> {
    Ok(Consume { approval_id: approval.into(), plan_hash: hash(p)?, now })
}

fn refused_code(r: &Reserved) -> Option<Code> {
    match r {
        Reserved::ApprovalRefused(why) => Some(why.code),
        _ => None,
    }
}

// ---- approvals ----

async fn approval_create_get_duplicate(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    let r = request("a-1", &p, T0)?;
    s.approvals.create_request(&r, Vec::new()).await?;
    assert_eq!(s.approvals.get_request("tenant-a", "a-1").await?, Some(r.clone()));
    assert_eq!(s.approvals.get_request("tenant-b", "a-1").await?, None, "requests are per tenant");
    assert_eq!(s.approvals.get_request("tenant-a", "a-2").await?, None);
    // The same request again: its plan has a live pending request, which is returned.
    let again = s.approvals.create_request(&r, Vec::new()).await?;
    assert_eq!(again, Created::Existing(Box::new(r.clone())));
    // Its id for another plan is a duplicate.
    let reused = s.approvals.create_request(&request("a-1", &plan("tenant-a", 5), T0)?, Vec::new()).await;
    assert!(matches!(reused, Err(StoreError::Duplicate(_))), "{reused:?}");
    // Ids are unique across tenants.
    let other = request("a-1", &plan("tenant-b", 3), T0)?;
    let clash = s.approvals.create_request(&other, Vec::new()).await;
    assert!(matches!(clash, Err(StoreError::Duplicate(_))), "{clash:?}");
    assert_eq!(s.approvals.get_request("tenant-b", "a-1").await?, None);
    Ok(())
}

async fn approval_find_for_plan_prefers_granted_and_skips_expired(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    let h = hash(&p)?;
    let now = secs(60);
    assert_eq!(s.approvals.find_for_plan("tenant-a", &h, now).await?, None);
    // An expired one is never found (and no longer holds the plan's pending slot).
    let mut expired = request("a-0", &p, secs(-600))?;
    expired.expires_at = secs(0);
    s.approvals.create_request(&expired, Vec::new()).await?;
    assert_eq!(s.approvals.find_for_plan("tenant-a", &h, now).await?, None, "expired is excluded");
    let g = granted(&s, "a-3", &p, secs(5)).await?;
    assert_eq!(s.approvals.create_request(&request("a-1", &p, secs(10))?, Vec::new()).await?, Created::New);
    // One pending request per plan: a second one gets the first back.
    let second = s.approvals.create_request(&request("a-2", &p, secs(20))?, Vec::new()).await?;
    ensure!(matches!(&second, Created::Existing(r) if r.id == "a-1"), "{second:?}");
    assert_eq!(s.approvals.get_request("tenant-a", "a-2").await?, None, "nothing stored");
    // A granted one beats the pending one.
    assert_eq!(s.approvals.find_for_plan("tenant-a", &h, now).await?, Some(g));
    // ... unless it has expired by then.
    let later = secs(10) + Duration::minutes(5);
    assert_eq!(s.approvals.find_for_plan("tenant-a", &h, later).await?, None, "all have expired");
    let before_g_expires = secs(5) + Duration::minutes(5) - Duration::seconds(1);
    let found = s.approvals.find_for_plan("tenant-a", &h, before_g_expires).await?.context("granted")?;
    assert_eq!(found.id, "a-3");
    let after_g_expires = secs(5) + Duration::minutes(5) + Duration::seconds(1);
    let found = s.approvals.find_for_plan("tenant-a", &h, after_g_expires).await?.context("pending")?;
    assert_eq!(found.id, "a-1");
    // Other plans and other tenants never match.
    assert_eq!(s.approvals.find_for_plan("tenant-a", &hash(&plan("tenant-a", 4))?, now).await?, None);
    assert_eq!(s.approvals.find_for_plan("tenant-b", &h, now).await?, None);
    // A consumed one is not offered again; the pending one is.
    let j = job("j-1", &p, None, Some("a-3"), now)?;
    assert_eq!(s.jobs.reserve(&j, Some(&consume("a-3", &p, now)?), Vec::new()).await?, Reserved::Reserved);
    let found = s.approvals.find_for_plan("tenant-a", &h, now).await?.context("pending")?;
    assert_eq!(found.id, "a-1");
    Ok(())
}

async fn approval_add_grant_is_optimistic(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    let mut r = request("a-1", &p, T0)?;
    r.level = ApprovalLevel::SignOff;
    s.approvals.create_request(&r, Vec::new()).await?;
    let first = grant("operator-2", false);
    let second = Grant { approver: "lead-3".into(), sign_off: true, at: datetime!(2026-01-01 10:00:00.5 +01:00) };
    s.approvals.add_grant("tenant-a", "a-1", 0, &first, false, Vec::new()).await?;
    let stale = s.approvals.add_grant("tenant-a", "a-1", 0, &second, true, Vec::new()).await;
    assert!(matches!(stale, Err(StoreError::Contention(_))), "{stale:?}");
    let now = s.approvals.get_request("tenant-a", "a-1").await?.context("stored")?;
    assert_eq!((now.status, now.grants.clone()), (ApprovalStatus::Pending, vec![first.clone()]));
    s.approvals.add_grant("tenant-a", "a-1", 1, &second, true, Vec::new()).await?;
    let now = s.approvals.get_request("tenant-a", "a-1").await?.context("stored")?;
    assert_eq!(now.status, ApprovalStatus::Granted);
    assert_eq!(now.grants, vec![first, second.clone()]);
    assert_eq!(now.approvers().as_deref(), Some("operator-2+lead-3"));
    // No longer pending: any further grant is contention.
    let late = s.approvals.add_grant("tenant-a", "a-1", 2, &grant("x", false), false, Vec::new()).await;
    assert!(matches!(late, Err(StoreError::Contention(_))), "{late:?}");
    let missing = s.approvals.add_grant("tenant-a", "a-9", 0, &second, true, Vec::new()).await;
    assert!(matches!(missing, Err(StoreError::NotFound(_))), "{missing:?}");
    let other_tenant = s.approvals.add_grant("tenant-b", "a-1", 2, &second, true, Vec::new()).await;
    assert!(matches!(other_tenant, Err(StoreError::NotFound(_))), "{other_tenant:?}");
    Ok(())
}

async fn approval_reject_and_list_pending(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    let now = secs(60);
    s.approvals.create_request(&request("a-0", &p, secs(-600))?, Vec::new()).await?; // expired at `now`
    granted(&s, "a-4", &p, secs(1)).await?;
    // `a-0` has expired by `a-3`'s creation, so it does not hold the plan.
    assert_eq!(s.approvals.create_request(&request("a-3", &p, secs(30))?, Vec::new()).await?, Created::New);
    s.approvals.create_request(&request("a-1", &plan("tenant-a", 5), secs(10))?, Vec::new()).await?;
    s.approvals.create_request(&request("a-2", &plan("tenant-a", 4), secs(20))?, Vec::new()).await?;
    s.approvals.create_request(&request("b-1", &plan("tenant-b", 3), secs(5))?, Vec::new()).await?;
    let ids = |v: Vec<ApprovalRequest>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(s.approvals.list_pending("tenant-a", now).await?), ["a-1", "a-2", "a-3"]);
    let counted = |v: Vec<(String, u64)>| v.into_iter().map(|(t, n)| format!("{t}={n}")).collect::<Vec<_>>();
    // Expired (a-0) and granted (a-4) requests are not pending; tenants come in order.
    assert_eq!(counted(s.approvals.count_pending(now).await?), ["tenant-a=3", "tenant-b=1"]);
    s.approvals.reject_request("tenant-a", "a-2", "operator-2", "too many replicas", Vec::new()).await?;
    let r = s.approvals.get_request("tenant-a", "a-2").await?.context("stored")?;
    assert_eq!(r.status, ApprovalStatus::Rejected);
    assert_eq!(r.rejection_reason.as_deref(), Some("too many replicas"));
    let again = s.approvals.reject_request("tenant-a", "a-2", "operator-2", "again", Vec::new()).await;
    assert!(matches!(again, Err(StoreError::Contention(_))), "{again:?}");
    let of_granted = s.approvals.reject_request("tenant-a", "a-4", "operator-2", "no", Vec::new()).await;
    assert!(matches!(of_granted, Err(StoreError::Contention(_))), "{of_granted:?}");
    let missing = s.approvals.reject_request("tenant-b", "a-1", "operator-2", "no", Vec::new()).await;
    assert!(matches!(missing, Err(StoreError::NotFound(_))), "{missing:?}");
    assert_eq!(ids(s.approvals.list_pending("tenant-a", now).await?), ["a-1", "a-3"]);
    assert_eq!(ids(s.approvals.list_pending("tenant-b", now).await?), ["b-1"]);
    assert_eq!(ids(s.approvals.list_pending("tenant-c", now).await?), Vec::<String>::new());
    assert_eq!(counted(s.approvals.count_pending(now).await?), ["tenant-a=2", "tenant-b=1"]);
    assert_eq!(counted(s.approvals.count_pending(secs(100_000)).await?), Vec::<String>::new(), "all expired by then");
    Ok(())
}

// ---- jobs ----

async fn reserve_claims_idempotency_keys(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    let first = job("j-1", &p, Some("k-1"), None, T0)?;
    assert_eq!(s.jobs.reserve(&first, None, Vec::new()).await?, Reserved::Reserved);
    assert_eq!(s.jobs.get_job("j-1").await?, Some(first.clone()));
    assert_eq!(s.jobs.find_by_key("tenant-a", "requester-1", "k-1").await?, Some(first.clone()));
    assert_eq!(s.jobs.find_by_key("tenant-a", "someone-else", "k-1").await?, None, "keys are per subject");
    assert_eq!(s.jobs.find_by_key("tenant-b", "requester-1", "k-1").await?, None, "keys are per tenant");
    // Same key again: the existing job, and nothing written.
    let second = job("j-2", &plan("tenant-a", 4), Some("k-1"), None, secs(1))?;
    assert_eq!(s.jobs.reserve(&second, None, Vec::new()).await?, Reserved::KeyTaken(Box::new(first.clone())));
    assert_eq!(s.jobs.get_job("j-2").await?, None);
    // The same key of another subject is free.
    let mut other = job("j-3", &p, Some("k-1"), None, secs(2))?;
    other.subject = "someone-else".into();
    assert_eq!(s.jobs.reserve(&other, None, Vec::new()).await?, Reserved::Reserved);
    // Jobs without a key never collide on keys; a reused job id is a duplicate.
    assert_eq!(s.jobs.reserve(&job("j-4", &p, None, None, secs(3))?, None, Vec::new()).await?, Reserved::Reserved);
    assert_eq!(s.jobs.reserve(&job("j-5", &p, None, None, secs(3))?, None, Vec::new()).await?, Reserved::Reserved);
    let dup = s.jobs.reserve(&job("j-4", &p, None, None, secs(4))?, None, Vec::new()).await;
    assert!(matches!(dup, Err(StoreError::Duplicate(_))), "{dup:?}");
    Ok(())
}

async fn reserve_consumes_an_approval_once(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    granted(&s, "a-1", &p, T0).await?;
    let now = secs(10);
    let j1 = job("j-1", &p, Some("k-1"), Some("a-1"), now)?;
    assert_eq!(s.jobs.reserve(&j1, Some(&consume("a-1", &p, now)?), Vec::new()).await?, Reserved::Reserved);
    let r = s.approvals.get_request("tenant-a", "a-1").await?.context("stored")?;
    assert_eq!((r.status, r.consumed_by.as_deref()), (ApprovalStatus::Consumed, Some("j-1")));
    let j2 = job("j-2", &p, Some("k-2"), Some("a-1"), now)?;
    let second = s.jobs.reserve(&j2, Some(&consume("a-1", &p, now)?), Vec::new()).await?;
    assert_eq!(refused_code(&second), Some(Code::ApprovalReplayed), "{second:?}");
    assert_eq!(s.jobs.get_job("j-2").await?, None);
    assert_eq!(s.jobs.find_by_key("tenant-a", "requester-1", "k-2").await?, None);
    Ok(())
}

async fn reserve_refusal_writes_nothing(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    let now = secs(10);
    let attempt = |approval: &str, p: &Plan, at: OffsetDateTime| -> anyhow::Result<(Job, Consume)> {
        Ok((job("j-1", p, Some("k-1"), Some(approval), at)?, consume(approval, p, at)?))
    };
    let check = async |approval: &str, p: &Plan, at: OffsetDateTime, code: Code| -> anyhow::Result<()> {
        let (j, c) = attempt(approval, p, at)?;
        let got = s.jobs.reserve(&j, Some(&c), Vec::new()).await?;
        ensure!(refused_code(&got) == Some(code), "{approval}: expected {code}, got {got:?}");
        ensure!(s.jobs.get_job("j-1").await?.is_none(), "{approval}: a refused reserve stored its job");
        ensure!(
            s.jobs.find_by_key("tenant-a", "requester-1", "k-1").await?.is_none(),
            "{approval}: a refused reserve claimed its key"
        );
        Ok(())
    };
    // Not granted yet (of another plan: one pending request per plan), missing, of another tenant.
    let p5 = plan("tenant-a", 5);
    s.approvals.create_request(&request("a-pending", &p5, T0)?, Vec::new()).await?;
    check("a-pending", &p5, now, Code::ApprovalRequired).await?;
    check("a-missing", &p, now, Code::ApprovalRequired).await?;
    granted(&s, "b-1", &plan("tenant-b", 3), T0).await?;
    check("b-1", &p, now, Code::ApprovalRequired).await?;
    // Expired, and granted for another plan.
    granted(&s, "a-1", &p, T0).await?;
    check("a-1", &p, T0 + Duration::minutes(5), Code::ApprovalExpired).await?;
    check("a-1", &plan("tenant-a", 4), now, Code::PlanChanged).await?;
    // The refusals left the approvals as they were.
    let pending = s.approvals.get_request("tenant-a", "a-pending").await?.context("stored")?;
    assert_eq!((pending.status, pending.consumed_by), (ApprovalStatus::Pending, None));
    let a1 = s.approvals.get_request("tenant-a", "a-1").await?.context("stored")?;
    assert_eq!((a1.status, a1.consumed_by), (ApprovalStatus::Granted, None));
    // The key is still free and the approval still usable.
    let (j, c) = attempt("a-1", &p, now)?;
    assert_eq!(s.jobs.reserve(&j, Some(&c), Vec::new()).await?, Reserved::Reserved);
    Ok(())
}

async fn job_transitions_only_from_expected_state(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    s.jobs.reserve(&job("j-1", &p, None, None, T0)?, None, Vec::new()).await?;
    let sent = StoredOutcome::of(&json!({"sent": true}));
    let moved = |id, from, to, outcome, at| s.jobs.transition(id, from, to, outcome, secs(at), Vec::new());
    assert!(moved("j-1", JobStatus::Reserved, JobStatus::Dispatched, Some(sent.clone()), 1).await?);
    assert!(!moved("j-1", JobStatus::Reserved, JobStatus::Dispatched, None, 2).await?);
    assert!(!moved("j-1", JobStatus::Succeeded, JobStatus::Failed, None, 2).await?);
    assert!(!moved("j-9", JobStatus::Reserved, JobStatus::Dispatched, None, 2).await?);
    // Without an outcome, the stored one stays.
    assert!(moved("j-1", JobStatus::Dispatched, JobStatus::Unknown, None, 3).await?);
    let j = s.jobs.get_job("j-1").await?.context("stored")?;
    assert_eq!((j.status, j.outcome, j.updated_at, j.created_at), (JobStatus::Unknown, Some(sent), secs(3), T0));
    let done = StoredOutcome::of(&json!({"replicas": 3, "note": null, "list": [1, 2.5, "x"]}));
    assert!(moved("j-1", JobStatus::Unknown, JobStatus::Succeeded, Some(done.clone()), 4).await?);
    let j = s.jobs.get_job("j-1").await?.context("stored")?;
    assert_eq!((j.status, j.outcome, j.updated_at), (JobStatus::Succeeded, Some(done), secs(4)));
    // A JSON null outcome is stored as such.
    s.jobs.reserve(&job("j-2", &p, None, None, T0)?, None, Vec::new()).await?;
    assert!(moved("j-2", JobStatus::Reserved, JobStatus::Failed, Some(StoredOutcome::of(&json!(null))), 5).await?);
    assert_eq!(s.jobs.get_job("j-2").await?.context("stored")?.outcome.map(|o| o.value()), Some(json!(null)));
    assert_eq!(s.jobs.get_job("j-9").await?, None);
    Ok(())
}

async fn unsettled_lists_non_final_jobs_oldest_first(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    let steps: [(&str, i64, &[JobStatus]); 6] = [
        ("j-1", 5, &[JobStatus::Dispatched]),
        ("j-2", 1, &[]),
        ("j-3", 3, &[JobStatus::Dispatched, JobStatus::Succeeded]),
        ("j-4", 4, &[JobStatus::Dispatched, JobStatus::Unknown]),
        ("j-5", 2, &[JobStatus::Failed]),
        ("j-0", 4, &[]),
    ];
    for (id, at, path) in steps {
        s.jobs.reserve(&job(id, &p, None, None, secs(at))?, None, Vec::new()).await?;
        let mut from = JobStatus::Reserved;
        for to in path {
            assert!(s.jobs.transition(id, from, *to, None, secs(10), Vec::new()).await?);
            from = *to;
        }
    }
    let ids: Vec<String> = s.jobs.unsettled().await?.into_iter().map(|j| j.id).collect();
    assert_eq!(ids, ["j-2", "j-0", "j-4", "j-1"]);
    Ok(())
}

// ---- budgets ----

async fn budget_debits_stop_at_the_limit(s: Stores) -> anyhow::Result<()> {
    let b = &s.budgets;
    assert_eq!(b.used("tenant-a", "run-1", BudgetKind::Calls).await?, 0);
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Calls, 3, 5).await?, Debit::Accepted { used: 3 });
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Calls, 3, 5).await?, Debit::Exhausted { used: 3 });
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Calls, 2, 5).await?, Debit::Accepted { used: 5 });
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Calls, 0, 5).await?, Debit::Accepted { used: 5 });
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Calls, 1, 5).await?, Debit::Exhausted { used: 5 });
    assert_eq!(b.used("tenant-a", "run-1", BudgetKind::Calls).await?, 5);
    // A raised limit lets more through; a lowered one refuses everything.
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Calls, 1, 6).await?, Debit::Accepted { used: 6 });
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Calls, 0, 2).await?, Debit::Exhausted { used: 6 });
    // Counters are per tenant, run and kind.
    assert_eq!(b.used("tenant-a", "run-1", BudgetKind::Tokens).await?, 0);
    assert_eq!(b.used("tenant-a", "run-2", BudgetKind::Calls).await?, 0);
    assert_eq!(b.used("tenant-b", "run-1", BudgetKind::Calls).await?, 0);
    // More than the limit at once is refused on a fresh counter too.
    assert_eq!(b.debit("tenant-a", "run-1", BudgetKind::Cost, 7, 5).await?, Debit::Exhausted { used: 0 });
    assert_eq!(b.used("tenant-a", "run-1", BudgetKind::Cost).await?, 0);
    // An effectively unlimited limit.
    assert_eq!(
        b.debit("tenant-a", "run-1", BudgetKind::Tokens, 1_000_000, u64::MAX).await?,
        Debit::Accepted { used: 1_000_000 }
    );
    Ok(())
}

async fn concurrent_debits_never_pass_the_limit(s: Stores) -> anyhow::Result<()> {
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.budgets.debit("tenant-a", "run-1", BudgetKind::Calls, 1, 50).await })
        })
        .collect();
    let (mut accepted, mut exhausted) = (0, 0);
    for t in tasks {
        match t.await?? {
            Debit::Accepted { .. } => accepted += 1,
            Debit::Exhausted { used } => {
                assert_eq!(used, 50);
                exhausted += 1;
            }
        }
    }
    assert_eq!((accepted, exhausted), (50, 14));
    assert_eq!(s.budgets.used("tenant-a", "run-1", BudgetKind::Calls).await?, 50);
    Ok(())
}

// ---- jobs under concurrency ----

async fn concurrent_reserves_consume_an_approval_once(s: Stores) -> anyhow::Result<()> {
    let p = plan("tenant-a", 3);
    granted(&s, "a-1", &p, T0).await?;
    let now = secs(10);
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let s = s.clone();
            let j = job(&format!("j-{i}"), &p, Some(&format!("k-{i}")), Some("a-1"), now);
            let c = consume("a-1", &p, now);
            tokio::spawn(async move {
                let (j, c) = (j?, c?);
                Ok::<_, anyhow::Error>((j.id.clone(), s.jobs.reserve(&j, Some(&c), Vec::new()).await?))
            })
        })
        .collect();
    let mut winners = Vec::new();
    let mut codes = BTreeMap::new();
    for t in tasks {
        let (id, got) = t.await??;
        match got {
            Reserved::Reserved => winners.push(id),
            Reserved::ApprovalRefused(why) => *codes.entry(why.code).or_insert(0) += 1,
            other => anyhow::bail!("unexpected {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(codes, BTreeMap::from([(Code::ApprovalReplayed, 31)]));
    let r = s.approvals.get_request("tenant-a", "a-1").await?.context("stored")?;
    assert_eq!(r.consumed_by.as_ref(), winners.first());
    let stored = s.jobs.unsettled().await?;
    assert_eq!(stored.iter().map(|j| &j.id).collect::<Vec<_>>(), winners.iter().collect::<Vec<_>>());
    Ok(())
}

// ---- audit ----

/// An audit record of `tenant`; `i` varies every optional field and the offset of `at`.
fn record(tenant: &str, i: u64) -> AuditRecord {
    let at = T0 + Duration::milliseconds(i64::try_from(i).unwrap_or(0));
    let odd = i % 2 == 1;
    AuditRecord {
        kind: if i % 5 == 4 { EventKind::ApprovalGranted } else { EventKind::ToolCall },
        call_id: format!("c-{i}"),
        at: if i.is_multiple_of(3) { at.to_offset(offset!(+05:30)) } else { at },
        tenant: tenant.into(),
        subject: "requester-1".into(),
        run_id: format!("run-{}", i % 4),
        incident: "inc-42".into(),
        tool: "scale_replicas".into(),
        policy_version: "v1".into(),
        plan_hash: odd.then(|| format!("{i:064x}")),
        executor_identity: odd.then(|| "scaler-bot".into()),
        approval_id: (i % 3 == 1).then(|| format!("a-{i}")),
        approver: (i % 3 == 1).then(|| "operator-2".into()),
        decision: [
            None,
            Some(Decision::Executed),
            Some(Decision::Rejected),
            Some(Decision::DryRun),
            Some(Decision::Replayed),
        ]
        .get(usize::try_from(i % 5).unwrap_or(0))
        .copied()
        .flatten(),
        code: (!odd).then(|| "policy_denied".into()),
        reason: i.is_multiple_of(4).then(|| format!("reason «{i}» with \"quotes\"")),
        timings: Timings { total_us: i * 7, policy_us: i, adapter_us: i * 3 },
        // Every version field and the operator's auth round-trip through each store (and are
        // absent on some events, as on events written before they existed).
        auth: [None, Some(bridle_core::audit::OperatorAuth::Token), Some(bridle_core::audit::OperatorAuth::As)]
            .get(usize::try_from(i % 3).unwrap_or(0))
            .copied()
            .flatten(),
        versions: bridle_core::audit::Versions {
            agent_id: odd.then(|| "advisor".into()),
            model: odd.then(|| "m-1".into()),
            prompt_hash: (i % 3 == 2).then(|| format!("{i:064x}")),
            tool_schema_hash: (!i.is_multiple_of(4)).then(|| "tools-1".into()),
            agent_source: [None, Some(AgentSource::Claim), Some(AgentSource::Principal), Some(AgentSource::Request)]
                .get(usize::try_from(i % 4).unwrap_or(0))
                .copied()
                .flatten(),
        },
    }
}

async fn audit_chains_per_tenant_across_batches(s: Stores) -> anyhow::Result<()> {
    assert!(s.audit.append(Vec::new()).await?.is_empty());
    assert!(s.audit.tenants().await?.is_empty());
    let batches: [Vec<(&str, u64)>; 3] = [
        (0..7).map(|i| (if i % 2 == 0 { "tenant-a" } else { "tenant-b" }, i)).collect(),
        // 100 + 10 × 4 + 3 rows for one tenant: every insert chunk size.
        (0..143).map(|i| ("tenant-a", 100 + i)).collect(),
        vec![("tenant-c", 1), ("tenant-b", 2), ("tenant-c", 3)],
    ];
    let mut written: BTreeMap<String, Vec<bridle_core::audit::AuditEvent>> = BTreeMap::new();
    for batch in batches {
        let records: Vec<AuditRecord> = batch.iter().map(|(t, i)| record(t, *i)).collect();
        let events = s.audit.append(records.clone()).await?;
        assert_eq!(events.iter().map(|e| e.record.clone()).collect::<Vec<_>>(), records);
        for e in events {
            written.entry(e.record.tenant.clone()).or_default().push(e);
        }
    }
    assert_eq!(s.audit.tenants().await?, ["tenant-a", "tenant-b", "tenant-c"]);
    for (tenant, expected) in &written {
        let stored = s.audit.events(tenant, 0, 10_000).await?;
        assert_eq!(&stored, expected, "{tenant}: stored events differ from appended ones");
        assert_eq!(verify_chain(tenant, &stored).map_err(|b| anyhow::anyhow!("{b:?}"))?, stored.len() as u64);
        // Instants come back with their offset, so hashes match.
        assert!(stored.iter().any(|e| e.record.at.offset() != time::UtcOffset::UTC));
    }
    assert_eq!(written.get("tenant-a").map(Vec::len), Some(4 + 143));
    assert_eq!(written.get("tenant-b").map(Vec::len), Some(3 + 1));
    // Pages: `seq > after`, at most `limit`.
    let page = s.audit.events("tenant-a", 3, 2).await?;
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [4, 5]);
    assert!(s.audit.events("tenant-a", 147, 10).await?.is_empty());
    assert!(s.audit.events("tenant-a", u64::MAX, 10).await?.is_empty());
    assert!(s.audit.events("tenant-z", 0, 10).await?.is_empty());
    // Each chain's head is its last event (what the head keeper signs).
    let mut heads = s.audit.heads().await?;
    heads.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    let expected: Vec<_> = written
        .iter()
        .filter_map(|(tenant, events)| {
            let last = events.last()?;
            Some(bridle_core::audit::head::ChainHead { tenant: tenant.clone(), seq: last.seq, hash: last.hash.clone() })
        })
        .collect();
    assert_eq!(heads, expected);
    Ok(())
}

// ---- decisions ----

fn decision(id: &str, tenant: &str, at: OffsetDateTime) -> DecisionRecord {
    DecisionRecord {
        decision_id: id.into(),
        pipeline_run_id: "pipe-1".into(),
        tenant: tenant.into(),
        agent: "analyst".into(),
        model: "model-x".into(),
        input: json!({"messages": [{"role": "user", "content": "scale checkout"}]}),
        output: json!("call scale_replicas"),
        prompt_tokens: 120,
        completion_tokens: 30,
        latency_ms: 850,
        harness_checks: json!([{"check": "schema", "ok": true}]),
        final_verdict: "accepted".into(),
        created_at: at,
        prompt_hash: Some(format!("p-{id}")),
        tool_schema_hash: Some("tools-1".into()),
        policy_version: None,
    }
}

/// The readiness probe (`GET /readyz`) answers on a store just opened (schema migrated, nothing
/// written) and on one holding events.
async fn a_migrated_store_is_ready_before_and_after_writes(s: Stores) -> anyhow::Result<()> {
    s.health.ping().await.context("fresh store")?;
    s.audit.append(vec![record("t1", 1), record("t1", 2)]).await?;
    s.health.ping().await.context("after appends")?;
    ensure!(s.audit.events("t1", 0, 10).await?.len() == 2);
    Ok(())
}

async fn decision_log_records_newest_first(s: Stores) -> anyhow::Result<()> {
    for (id, tenant, at) in [
        ("d-1", "tenant-a", secs(1)),
        ("d-3", "tenant-a", secs(3)),
        ("d-2", "tenant-a", secs(2)),
        ("d-4", "tenant-b", secs(4)),
        ("d-5", "tenant-a", secs(3)), // ties keep insertion order
    ] {
        s.decisions.record(&decision(id, tenant, at)).await?;
    }
    let dup = s.decisions.record(&decision("d-1", "tenant-b", secs(9))).await;
    assert!(matches!(dup, Err(StoreError::Duplicate(_))), "{dup:?}");
    let recent = s.decisions.recent("tenant-a", 10).await?;
    assert_eq!(recent.first(), Some(&decision("d-3", "tenant-a", secs(3))));
    let ids = |v: Vec<DecisionRecord>| v.into_iter().map(|d| d.decision_id).collect::<Vec<_>>();
    assert_eq!(ids(recent), ["d-3", "d-5", "d-2", "d-1"]);
    assert_eq!(ids(s.decisions.recent("tenant-a", 2).await?), ["d-3", "d-5"]);
    assert_eq!(ids(s.decisions.recent("tenant-b", 10).await?), ["d-4"]);
    assert!(s.decisions.recent("tenant-a", 0).await?.is_empty());
    Ok(())
}
