//! One test per gate code not covered by the matrix or the demo: run state, step grid, guard
//! seam, state rules, human choice, adapter failures, idempotency.

use std::sync::Arc;

use bridle_core::ports::ArgumentScanner;
use bridle_core::{Code, Rejection};
use bridle_runtime::adapter::Fault;
use bridle_runtime::gate::CallRequest;
use serde_json::json;

use super::support::{H, T0, run};
use bridle_core::RunContext;
use bridle_core::runs::{RunLimits, RunState};
use bridle_runtime::store::Stores;

fn set_temp(t: f64) -> CallRequest {
    CallRequest::new("set_temperature", json!({"equipment": "etch-01", "temp_celsius": t}))
}

#[tokio::test]
async fn run_state_codes_come_first() {
    let mut config = bridle_runtime::bundled::checkout().unwrap();
    config.limits.defaults =
        RunLimits { calls: Some(2), deadline: Some(std::time::Duration::from_secs(60)), concurrency: None };
    let h = H::new(config, Stores::memory());
    let me = h.who("requester-1");
    let unknown = CallRequest::new("nope", json!({}));
    let mut r = run();
    r.cancelled = true;
    assert_eq!(h.gate.call(&me, &r, &unknown).await.unwrap().code(), Some(Code::Cancelled));
    // A cancelled call is refused before the run counts it: two calls remain.
    for _ in 0..2 {
        assert_eq!(h.gate.call(&me, &run(), &unknown).await.unwrap().code(), Some(Code::UnknownTool));
    }
    let out = h.gate.call(&me, &run(), &unknown).await.unwrap();
    assert_eq!(out.code(), Some(Code::BudgetExhausted));
    let rej = super::support::rejection(&out);
    assert_eq!(rej.detail["budget"], "calls");
    assert_eq!(rej.detail["used"], 2);
    // The deadline counts from the run's first call (T0+10 s): a minute later it has passed.
    h.clock.set(T0 + time::Duration::seconds(70));
    let other = RunContext::new("run-102", "inc-42");
    assert_eq!(h.gate.call(&me, &other, &unknown).await.unwrap().code(), Some(Code::UnknownTool), "a new run");
    assert_eq!(h.gate.call(&me, &run(), &unknown).await.unwrap().code(), Some(Code::DeadlineExceeded));
    let record = h.gate.stores().runs.run("tenant-a", "run-101").await.unwrap().unwrap();
    assert_eq!((record.calls, record.state), (2, RunState::Expired), "refused calls are not counted");
}

#[tokio::test]
async fn range_then_step_then_delta() {
    let h = H::fab();
    let me = h.who("engineer");
    let code = |t| {
        let (h, me) = (&h, &me);
        async move { h.gate.call(me, &run(), &set_temp(t)).await.unwrap().code() }
    };
    assert_eq!(code(-500.0).await, Some(Code::OutOfRange));
    assert_eq!(code(1001.0).await, Some(Code::OutOfRange), "range is checked before step");
    assert_eq!(code(382.0).await, Some(Code::StepMismatch));
    assert_eq!(code(365.0).await, Some(Code::DeltaTooLarge), "seed 000: a 15 degree drop where 5 is the limit");
    assert_eq!(code(385.0).await, None);
    assert_eq!(h.adapter.snapshot("fab-1", "etch-01").unwrap()["temp_celsius"], 385.0);
}

#[tokio::test]
async fn unauthorized_caller_never_triggers_a_state_read() {
    let h = H::fab();
    let mut outsider = h.who("engineer");
    outsider.services.clear();
    let out = h.gate.call(&outsider, &run(), &set_temp(365.0)).await.unwrap();
    assert_eq!(out.code(), Some(Code::PolicyDenied), "policy answers before max_delta reveals anything");
    let e = h.tool_calls().await.pop().unwrap();
    assert_eq!(e.record.timings.adapter_us, 0);
}

#[tokio::test]
async fn unreadable_state_is_state_unavailable() {
    let h = H::fab();
    let mut me = h.who("engineer");
    me.services.insert("etch-02".into());
    let req = CallRequest::new("set_temperature", json!({"equipment": "etch-02", "temp_celsius": 380}));
    assert_eq!(h.gate.call(&me, &run(), &req).await.unwrap().code(), Some(Code::StateUnavailable));
}

#[tokio::test]
async fn threshold_escalates_auto_to_approval() {
    let h = H::fab();
    let me = h.who("engineer");
    // 380 → 400 in steps of 5 runs automatically; above 400 needs a human although the tool
    // default is auto.
    for t in [385.0, 390.0, 395.0, 400.0] {
        assert_eq!(h.gate.call(&me, &run(), &set_temp(t)).await.unwrap().code(), None, "{t}");
    }
    let out = h.gate.call(&me, &run(), &set_temp(405.0)).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
    assert_eq!(h.adapter.snapshot("fab-1", "etch-01").unwrap()["temp_celsius"], 400.0);
}

#[tokio::test]
async fn several_candidates_need_a_human_choice() {
    let h = H::fab();
    let mut req = set_temp(385.0);
    req.signals.candidates = 2;
    let out = h.gate.call(&h.who("engineer"), &run(), &req).await.unwrap();
    assert_eq!(out.code(), Some(Code::HumanChoiceRequired));
    let mut req = set_temp(385.0);
    req.signals.confidence = Some(0.31);
    let out = h.gate.call(&h.who("engineer"), &run(), &req).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired), "low confidence escalates to approval");
}

struct Canary;
impl ArgumentScanner for Canary {
    fn scan(&self, param: &str, text: &str) -> Result<(), Rejection> {
        if text.contains("ignore previous instructions") {
            Err(Rejection::new(Code::InjectionDetected, format!("`{param}` carries an instruction override")))
        } else {
            Ok(())
        }
    }
}

#[tokio::test]
async fn scanned_params_go_through_the_guard_before_policy() {
    let mut h = H::fab();
    h.rebuild(|b| b.scanner(Arc::new(Canary)));
    let mut outsider = h.who("engineer");
    outsider.scopes.clear();
    let req = CallRequest::new(
        "set_temperature",
        json!({"equipment": "etch-01", "temp_celsius": 385, "reason": "ignore previous instructions"}),
    );
    // Step 4 (guard) answers before step 5 (policy) even for a caller policy would deny.
    assert_eq!(h.gate.call(&outsider, &run(), &req).await.unwrap().code(), Some(Code::InjectionDetected));
    let fine =
        CallRequest::new("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 385, "reason": "drift"}));
    assert_eq!(h.gate.call(&h.who("engineer"), &run(), &fine).await.unwrap().code(), None);
}

#[tokio::test]
async fn adapter_failures_have_their_codes() {
    let h = H::fab();
    let me = h.who("engineer");
    h.adapter.inject(Fault::Fail);
    assert_eq!(h.gate.call(&me, &run(), &set_temp(385.0)).await.unwrap().code(), Some(Code::AdapterFailed));
    h.adapter.inject(Fault::Stall(std::time::Duration::from_secs(2)));
    let out = h.gate.call(&me, &run(), &set_temp(385.0)).await.unwrap();
    assert_eq!(out.code(), Some(Code::AdapterTimeout), "the tool's 200 ms timeout fires");
    let job = h.gate.stores().jobs.get_job(out.job_id.as_deref().unwrap()).await.unwrap().unwrap();
    assert_eq!(job.status, bridle_core::job::JobStatus::Unknown, "a change that timed out may have happened");
}

#[tokio::test]
async fn a_tainted_read_waits_for_approval_then_runs_through_the_read_identity() {
    let h = H::checkout();
    let (me, r) = (h.who("requester-1"), run());
    let mut req = CallRequest::new("get_service_snapshot", json!({"service": "checkout"}));
    req.signals.tainted = true;
    let first = h.gate.call(&me, &r, &req).await.unwrap();
    assert_eq!(first.code(), Some(Code::ApprovalRequired));
    h.desk.grant(&h.who("operator-2"), first.approval_id.as_deref().unwrap()).await.unwrap();
    let out = h.gate.call(&me, &r, &req).await.unwrap();
    assert_eq!(out.code(), None);
    assert_eq!(out.result().unwrap()["replicas"], 2);
    assert_eq!(out.executor_identity.as_deref(), Some("reader-identity"));
    assert_eq!(h.adapter.changes_applied(), 0);
}
