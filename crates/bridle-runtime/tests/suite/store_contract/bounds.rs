//! Issue 19 point 2 on every backend: the gate's entry refuses unbounded or unstorable ids and
//! text with `bad_request` before anything is stored, the refusal is still audited (the field
//! as a bounded marker), long derived keys are hashed for the index, the desk refuses a bad
//! reason, and a kill switch is set whatever its reason.

use anyhow::{Context, ensure};
use bridle_core::audit::{EventKind, verify_chain};
use bridle_core::kill::KillScope;
use bridle_core::{Code, RunContext};
use bridle_runtime::approvals::ApprovalError;
use bridle_runtime::gate::{CallOutcome, CallRequest};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};

use super::{memory, postgres, sqlite_file, sqlite_memory};
use crate::suite::support::H;

contract!(
    a_3kb_and_a_1mb_run_id_are_refused_and_nothing_is_stored,
    nul_in_each_stored_field_is_refused_with_bad_request_and_audited,
    a_reject_reason_with_nul_or_over_2000_characters_is_refused_and_the_request_stays_pending,
    a_kill_switch_set_with_a_nul_reason_is_set,
    a_long_derived_idempotency_key_is_hashed_and_still_replays,
);

fn change(replicas: i64) -> Value {
    json!({"service": "checkout", "replicas": replicas, "resource_version": 7})
}

fn h(stores: Stores) -> anyhow::Result<H> {
    Ok(H::new(bridle_runtime::bundled::checkout().context("bundled config")?, stores))
}

fn refused(o: &CallOutcome) -> anyhow::Result<(Code, String)> {
    match &o.verdict {
        bridle_runtime::Verdict::Rejected { rejection } => {
            Ok((rejection.code, rejection.detail["field"].as_str().unwrap_or_default().to_owned()))
        }
        other => anyhow::bail!("not rejected: {other:?}"),
    }
}

/// Nothing but audit events: no approval request, no job, no spent budget.
async fn nothing_stored(h: &H, run_id: &str) -> anyhow::Result<()> {
    let s = h.gate.stores();
    let pending = s.approvals.list_pending("tenant-a", h.clock_now()).await?;
    ensure!(pending.is_empty(), "approval requests stored: {pending:?}");
    let jobs = s.jobs.unsettled().await?;
    ensure!(jobs.is_empty(), "jobs stored: {jobs:?}");
    ensure!(h.adapter.changes_applied() == 0);
    if run_id.len() <= 128 && !run_id.contains('\0') {
        ensure!(s.budgets.used("tenant-a", run_id, bridle_core::ports::BudgetKind::Calls).await? == 0);
    }
    Ok(())
}

/// Every stored event is bounded and NUL-free, and the chain verifies.
async fn audited_bounded(h: &H, refusals: usize) -> anyhow::Result<()> {
    let events = h.events().await;
    ensure!(verify_chain("tenant-a", events.iter().filter(|e| e.record.tenant == "tenant-a")).is_ok(), "chain broken");
    let bad: Vec<_> = events.iter().filter(|e| e.record.code.as_deref() == Some("bad_request")).collect();
    ensure!(bad.len() == refusals, "{} bad_request events, expected {refusals}", bad.len());
    for e in &events {
        let r = &e.record;
        let fields = [&r.run_id, &r.incident, &r.subject, &r.tenant, &r.tool];
        ensure!(fields.iter().all(|f| f.len() <= 256 && !f.contains('\0')), "unbounded field in {r:?}");
        ensure!(r.approval_id.as_deref().is_none_or(|a| a.len() <= 128 && !a.contains('\0')));
        ensure!(r.reason.as_deref().is_none_or(|a| !a.contains('\0')));
    }
    Ok(())
}

async fn a_3kb_and_a_1mb_run_id_are_refused_and_nothing_is_stored(s: Stores) -> anyhow::Result<()> {
    let h = h(s)?;
    let me = h.who("requester-1");
    for size in [3 * 1024, 1 << 20] {
        let run = RunContext::new(&"r".repeat(size), "inc-42");
        let out = h.gate.call(&me, &run, &CallRequest::new("scale_replicas", change(3))).await?;
        ensure!(refused(&out)? == (Code::BadRequest, "run_id".to_owned()), "{out:?}");
        ensure!(out.approval_id.is_none() && out.job_id.is_none());
        nothing_stored(&h, &run.run_id).await?;
    }
    audited_bounded(&h, 2).await?;
    let markers: Vec<_> = h.tool_calls().await.into_iter().map(|e| e.record.run_id).collect();
    ensure!(markers.iter().all(|m| m.starts_with("refused:sha256:")), "{markers:?}");
    ensure!(markers.first() != markers.get(1), "one marker per value");
    Ok(())
}

async fn nul_in_each_stored_field_is_refused_with_bad_request_and_audited(s: Stores) -> anyhow::Result<()> {
    let h = h(s)?;
    let me = h.who("requester-1");
    let ok = RunContext::new("run-101", "inc-42");
    let call = || CallRequest::new("scale_replicas", change(3));
    let cases: Vec<(&str, RunContext, CallRequest)> = vec![
        ("run_id", RunContext::new("run\u{0}-101", "inc-42"), call()),
        ("incident", RunContext::new("run-101", "inc\u{0}42"), call()),
        ("idempotency_key", ok.clone(), call().with_key("k\u{0}1")),
        ("agent", ok.clone(), call().for_agent("incident\u{0}responder")),
        ("approval_id", ok.clone(), call().with_approval("a\u{0}1")),
        (
            "arguments.note",
            ok.clone(),
            CallRequest::new("get_service_snapshot", json!({"service": "checkout", "note": "x\u{0}"})),
        ),
        ("arguments.service", ok.clone(), CallRequest::new("scale_replicas", json!({"service": "check\u{0}out"}))),
    ];
    let n = cases.len();
    for (field, run, req) in cases {
        let out = h.gate.call(&me, &run, &req).await.with_context(|| format!("{field}: not a 2xx verdict"))?;
        ensure!(refused(&out)? == (Code::BadRequest, field.to_owned()), "{field}: {out:?}");
        ensure!(!out.rejection_message().contains('\0'), "{field}: the message quotes the value");
        nothing_stored(&h, &run.run_id).await?;
    }
    audited_bounded(&h, n).await
}

async fn a_reject_reason_with_nul_or_over_2000_characters_is_refused_and_the_request_stays_pending(
    s: Stores,
) -> anyhow::Result<()> {
    let h = h(s)?;
    let (me, op) = (h.who("requester-1"), h.who("operator-2"));
    let run = RunContext::new("run-101", "inc-42");
    let out = h.gate.call(&me, &run, &CallRequest::new("scale_replicas", change(3))).await?;
    let id = out.approval_id.context("a pending request")?;
    for reason in ["bad\0reason".to_owned(), "x".repeat(2001)] {
        match h.desk.reject(&op, &id, &reason).await {
            Err(ApprovalError::Refused(r)) => ensure!(r.code == Code::BadRequest, "{r:?}"),
            other => anyhow::bail!("not refused: {other:?}"),
        }
    }
    match h.desk.grant(&op, "a\0b").await {
        Err(ApprovalError::Refused(r)) => ensure!(r.code == Code::BadRequest, "{r:?}"),
        other => anyhow::bail!("not refused: {other:?}"),
    }
    let pending = h.gate.stores().approvals.list_pending("tenant-a", h.clock_now()).await?;
    ensure!(pending.iter().any(|p| p.id == id), "no longer pending");
    let rejected = h.desk.reject(&op, &id, &"y".repeat(2000)).await?;
    ensure!(rejected.rejection_reason.map(|r| r.chars().count()) == Some(2000));
    Ok(())
}

async fn a_kill_switch_set_with_a_nul_reason_is_set(s: Stores) -> anyhow::Result<()> {
    let h = h(s)?;
    let scope = KillScope { tenant: Some("tenant-a".into()), agent: None };
    let report = h.kills.set(None, None, "ops-1", scope.clone(), "bad\0deploy").await?;
    ensure!(report.changed);
    let on = h.gate.stores().kills.kill_covering("tenant-a", None).await?.context("the switch is on")?;
    ensure!(on.reason == "bad\u{fffd}deploy", "{:?}", on.reason);
    let out = h
        .gate
        .call(
            &h.who("requester-1"),
            &RunContext::new("run-1", ""),
            &CallRequest::new("get_service_snapshot", json!({"service": "checkout"})),
        )
        .await?;
    ensure!(refused(&out)?.0 == Code::Killed);
    // An empty reason is an emergency stop too.
    h.kills.lift("ops-1", scope.clone(), "").await?;
    let report = h.kills.set(None, None, "ops-1", scope, "").await?;
    ensure!(report.changed && report.switch.reason == bridle_core::bounds::NO_REASON);
    let kinds: Vec<_> = h.events().await.into_iter().map(|e| e.record.kind).collect();
    ensure!(kinds.iter().filter(|k| **k == EventKind::KillSwitchSet).count() == 2, "{kinds:?}");
    Ok(())
}

async fn a_long_derived_idempotency_key_is_hashed_and_still_replays(s: Stores) -> anyhow::Result<()> {
    let h = h(s)?;
    let me = h.who("requester-1");
    let run = RunContext::new("run-101", "inc-42");
    h.approved("a-1", &change(3), &run).await;
    // As a graph node derives it: `{thread}/{step}:{task}/call-{n}`, past the 128-byte index bound.
    let key = format!("tenant-a/{}/12:{}/call-0", uuid::Uuid::now_v7(), "a-long-node-name-".repeat(20));
    ensure!(key.len() > 300 && key.len() <= bridle_core::bounds::KEY_MAX);
    let first = h.gate.call(&me, &run, &CallRequest::new("scale_replicas", change(3)).with_key(&key)).await?;
    ensure!(first.code().is_none(), "{first:?}");
    let job = h.gate.stores().jobs.get_job(first.job_id.as_deref().unwrap_or_default()).await?.context("job")?;
    let stored = job.idempotency_key.unwrap_or_default();
    ensure!(stored.starts_with("sha256:") && stored.len() == 71, "{stored}");
    let retry = h.gate.call(&me, &run, &CallRequest::new("scale_replicas", change(3)).with_key(&key)).await?;
    ensure!(retry.idempotent_replay && retry.job_id == first.job_id, "{retry:?}");
    ensure!(h.adapter.changes_applied() == 1);
    // Past the key bound: refused, not hashed.
    let too_long = "k".repeat(bridle_core::bounds::KEY_MAX + 1);
    let out = h.gate.call(&me, &run, &CallRequest::new("scale_replicas", change(4)).with_key(&too_long)).await?;
    ensure!(refused(&out)? == (Code::BadRequest, "idempotency_key".to_owned()));
    Ok(())
}

/// The rejection's message, or empty.
trait Message {
    fn rejection_message(&self) -> String;
}

impl Message for CallOutcome {
    fn rejection_message(&self) -> String {
        match &self.verdict {
            bridle_runtime::Verdict::Rejected { rejection } => rejection.message.clone(),
            _ => String::new(),
        }
    }
}
