//! The gate's outcome as an MCP tool result, the same in both protocol eras: an executed call
//! is a success whose structured content is the outcome; a rejection is `isError: true` with
//! structured content `{code, message}` (plus `approval_id`, `approval_url` and the `plan`
//! being approved when an approval is pending: an approval is a third party's decision, so it is
//! never a 2026-07-28 `input_required` round trip). A tool whose contract declares an output
//! schema gets its result itself as structured content, the outcome in `_meta`
//! `bridle/outcome`. It only reshapes the verdict, never decides.

use bridle_core::Code;
use bridle_core::contract::CompiledSchema;
use bridle_runtime::gate::{CallOutcome, Verdict};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value, json};

/// `_meta` key of a declared-output tool result that carries Bridle's outcome (call id, plan
/// hash, job …), since its structured content is the tool's result.
pub const OUTCOME_META: &str = "bridle/outcome";

/// The MCP tool result for `outcome`; `console` is the base of approval URLs, `output` the
/// tool's declared output schema, if any.
pub fn tool_result(outcome: &CallOutcome, console: &str, output: Option<&CompiledSchema>) -> CallToolResult {
    match &outcome.verdict {
        Verdict::Rejected { rejection } => {
            let mut content = Map::new();
            content.insert("code".into(), json!(rejection.code));
            content.insert("message".into(), json!(rejection.message));
            content.insert("call_id".into(), json!(outcome.call_id));
            if !rejection.detail.is_null() {
                content.insert("detail".into(), rejection.detail.clone());
            }
            let mut text = format!("{}: {}", code_str(rejection.code), rejection.message);
            if let Some(id) = &outcome.approval_id {
                content.insert("approval_id".into(), json!(id));
                if matches!(rejection.code, Code::ApprovalRequired | Code::HumanChoiceRequired) {
                    let url = format!("{console}/approvals/{id}");
                    text.push_str(&format!(" (approval `{id}`: {url})"));
                    content.insert("approval_url".into(), json!(url));
                    for key in ["plan", "plan_hash"] {
                        if let Some(v) = rejection.detail.get(key) {
                            content.insert(key.into(), v.clone());
                        }
                    }
                }
            }
            let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
            result.structured_content = Some(Value::Object(content));
            result
        }
        Verdict::Ok { result: value } => {
            // A tool with untrusted output hands the model its spotlighted text, not the raw result.
            let text = outcome
                .output
                .as_ref()
                .and_then(|o| o.spotlight.as_ref())
                .map_or_else(|| value.to_string(), |s| s.text.clone());
            match output {
                None => {
                    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                    result.structured_content = Some(structured(outcome));
                    result
                }
                Some(schema) if schema.accepts(value) => {
                    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                    result.structured_content = Some(value.clone());
                    let mut meta = MetaObject::default();
                    meta.insert(OUTCOME_META.into(), structured(outcome));
                    result.meta = Some(meta);
                    result
                }
                // The call ran, but what came back is not what the contract promised: the
                // client is told so rather than handed content its schema would refuse.
                Some(_) => {
                    let message = format!(
                        "call `{}` ran, but its result does not match the tool's declared output schema",
                        outcome.call_id
                    );
                    let mut result =
                        CallToolResult::error(vec![ContentBlock::text(format!("adapter_failed: {message}"))]);
                    let mut content = structured(outcome);
                    if let Some(fields) = content.as_object_mut() {
                        fields.insert("code".into(), json!(Code::AdapterFailed));
                        fields.insert("message".into(), json!(message));
                    }
                    result.structured_content = Some(content);
                    result
                }
            }
        }
        Verdict::DryRun { .. } => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(structured(outcome).to_string())]);
            result.structured_content = Some(structured(outcome));
            result
        }
    }
}

/// A call refused at the MCP edge before the gate (an id or argument out of bounds): `isError`
/// with structured content `{code, message, detail}`, like a gate rejection but with no call id
/// (nothing was stored).
pub fn refusal(rejection: &bridle_core::Rejection) -> CallToolResult {
    let text = format!("{}: {}", code_str(rejection.code), rejection.message);
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content =
        Some(json!({"code": rejection.code, "message": rejection.message, "detail": rejection.detail}));
    result
}

/// The outcome as a JSON object (`call_id`, `tool`, `status`, `result`, `plan_hash`, `job_id` …).
fn structured(outcome: &CallOutcome) -> Value {
    serde_json::to_value(outcome).unwrap_or_else(|e| json!({"status": "ok", "serialization_error": e.to_string()}))
}

/// The stable string of a code.
fn code_str(code: Code) -> String {
    match serde_json::to_value(code) {
        Ok(Value::String(s)) => s,
        _ => format!("{code:?}"),
    }
}

#[cfg(test)]
mod tests {
    use bridle_core::Rejection;

    use super::*;

    fn outcome(verdict: Verdict, approval_id: Option<&str>) -> CallOutcome {
        CallOutcome {
            tool_call_id: None,
            call_id: "c1".into(),
            tool: "scale_replicas".into(),
            run_id: "run-1".into(),
            verdict,
            plan_hash: None,
            level: None,
            approval_id: approval_id.map(str::to_owned),
            job_id: None,
            executor_identity: None,
            idempotent_replay: false,
            output: None,
        }
    }

    #[test]
    fn approval_required_carries_the_id_and_the_console_url() {
        let rejection = Rejection::new(Code::ApprovalRequired, "needs approval");
        let r = tool_result(&outcome(Verdict::Rejected { rejection }, Some("ap-1")), "http://h:1", None);
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.unwrap_or_default();
        assert_eq!(s.get("code"), Some(&json!("approval_required")));
        assert_eq!(s.get("message"), Some(&json!("needs approval")));
        assert_eq!(s.get("approval_id"), Some(&json!("ap-1")));
        assert_eq!(s.get("approval_url"), Some(&json!("http://h:1/approvals/ap-1")));
    }

    #[test]
    fn an_executed_call_is_a_success_with_the_outcome() {
        let r = tool_result(&outcome(Verdict::Ok { result: json!({"replicas": 2}) }, None), "http://h", None);
        assert_eq!(r.is_error, Some(false));
        let s = r.structured_content.unwrap_or_default();
        assert_eq!(s.get("status"), Some(&json!("ok")));
        assert_eq!(s.pointer("/result/replicas"), Some(&json!(2)));
    }

    #[test]
    fn a_declared_output_is_the_structured_content_and_the_outcome_goes_to_meta() {
        let schema = CompiledSchema::compile_output(json!({
            "type": "object", "properties": {"replicas": {"type": "integer"}}, "required": ["replicas"]
        }));
        assert!(schema.is_ok(), "{schema:?}");
        let Ok(schema) = schema else { return };
        let ok = outcome(Verdict::Ok { result: json!({"replicas": 2, "extra": "kept"}) }, None);
        let r = tool_result(&ok, "http://h", Some(&schema));
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"replicas": 2, "extra": "kept"})));
        let meta = r.meta.unwrap_or_default();
        assert_eq!(meta.get(OUTCOME_META).and_then(|o| o.get("call_id")), Some(&json!("c1")));
        // A result that breaks the promise is an error naming the call, never passed off as valid.
        let bad = outcome(Verdict::Ok { result: json!({"replicas": "two"}) }, None);
        let r = tool_result(&bad, "http://h", Some(&schema));
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.unwrap_or_default();
        assert_eq!((s.get("code"), s.get("call_id")), (Some(&json!("adapter_failed")), Some(&json!("c1"))));
    }
}
