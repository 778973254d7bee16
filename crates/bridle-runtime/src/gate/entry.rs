//! Gate entry, before step 2: the bounds of `bridle_core::bounds` on the call itself, so a
//! library, workflow or pipeline caller meets the same refusal as the HTTP, MCP and CLI doors.
//!
//! A refusal is `bad_request` naming the field (never quoting it) and is audited like every
//! rejection; the record's offending field becomes a bounded marker (`bounds::bound_record`, run
//! by every store's append). A long idempotency key is not refused but hashed for the index.

use std::borrow::Cow;

use bridle_core::bounds::{self, BoundError};
use bridle_core::{Principal, Rejection, RunContext};

use super::CallRequest;

/// Longest history key field (diagnosis, equipment class) the gate reads. (A tool name is not
/// bounded here: an unregistered one is `unknown_tool`, clipped in its audit record.)
const NAME_MAX: usize = 128;

/// The call as the steps see it, or the refusal. The request is borrowed unchanged unless its
/// idempotency key is longer than `bounds::STORED_KEY_MAX` bytes: then the steps (lookup and
/// reserve alike) use `bounds::hashed_key` of it.
pub(super) fn admit<'a>(
    principal: &Principal,
    run: &RunContext,
    req: &'a CallRequest,
) -> Result<Cow<'a, CallRequest>, Rejection> {
    check(principal, run, req).map_err(|e| e.rejection())?;
    match req.idempotency_key.as_deref().map(bounds::hashed_key) {
        Some(Cow::Owned(hashed)) => {
            let mut owned = req.clone();
            owned.idempotency_key = Some(hashed);
            Ok(Cow::Owned(owned))
        }
        _ => Ok(Cow::Borrowed(req)),
    }
}

fn check(principal: &Principal, run: &RunContext, req: &CallRequest) -> Result<(), BoundError> {
    // INVARIANT: nothing unbounded or unstorable passes this point to a store or an index key.
    bounds::check_principal(principal)?;
    bounds::check_id("run_id", &run.run_id)?;
    bounds::check_id("incident", &run.incident)?;
    if let Some(agent) = &req.agent {
        bounds::check_agent("agent", agent)?;
    }
    if let Some(id) = &req.approval_id {
        bounds::check_id("approval_id", id)?;
    }
    if let Some(key) = &req.idempotency_key {
        bounds::check_key("idempotency_key", key)?;
    }
    if let Some(history) = &req.signals.history {
        bounds::check_text("signals.history.diagnosis", &history.diagnosis, NAME_MAX)?;
        bounds::check_text("signals.history.equipment_class", &history.equipment_class, NAME_MAX)?;
    }
    bounds::check_json("arguments", &req.arguments)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use bridle_core::Code;
    use serde_json::json;

    fn alice() -> Principal {
        Principal::new("alice", "acme", &["checkout"], &["service:read"])
    }

    #[test]
    fn a_plain_call_passes_borrowed() {
        let req = CallRequest::new("get_status", json!({"service": "checkout"})).with_key("run-1/3:plan/call");
        let admitted = admit(&alice(), &RunContext::new("run-1", "inc-1"), &req);
        assert!(matches!(admitted, Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn each_field_is_checked() {
        let run = RunContext::new("run-1", "inc-1");
        let base = CallRequest::new("get_status", json!({}));
        let cases: Vec<(&str, RunContext, CallRequest)> = vec![
            ("run_id", RunContext::new(&"r".repeat(3000), ""), base.clone()),
            ("incident", RunContext::new("run-1", "inc\0"), base.clone()),
            ("agent", run.clone(), base.clone().for_agent("a\0")),
            ("approval_id", run.clone(), base.clone().with_approval(&"a".repeat(200))),
            ("idempotency_key", run.clone(), base.clone().with_key("k\0")),
            ("arguments.note", run.clone(), CallRequest::new("get_status", json!({"note": "x\u{0}"}))),
        ];
        for (field, run, req) in cases {
            let r = admit(&alice(), &run, &req).err();
            let r = r.unwrap_or_else(|| Rejection::new(Code::InternalError, "admitted"));
            assert_eq!((r.code, r.detail["field"].as_str()), (Code::BadRequest, Some(field)), "{field}");
        }
    }

    #[test]
    fn a_long_derived_key_is_hashed_not_refused() {
        let key = format!("acme/{}/12:a-long-node-name/call-0", "x".repeat(200));
        let req = CallRequest::new("set_value", json!({})).with_key(&key);
        let admitted = admit(&alice(), &RunContext::new("run-1", ""), &req).ok();
        let stored = admitted.and_then(|r| r.idempotency_key.clone()).unwrap_or_default();
        assert!(stored.starts_with("sha256:") && stored.len() == 71, "{stored}");
    }
}
