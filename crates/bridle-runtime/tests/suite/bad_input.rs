//! Hostile or broken arguments get a stable code, never a panic, and nothing half-written.

use bridle_core::Code;
use bridle_runtime::gate::CallRequest;
use serde_json::{Value, json};

use super::support::{H, run};

fn nested(depth: usize) -> Value {
    let mut v = json!("x");
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

#[tokio::test]
async fn hostile_arguments_are_rejected_with_codes() {
    let h = H::checkout();
    let me = h.who("requester-1");
    let cases: Vec<(&str, Value, Code)> = vec![
        ("get_service_snapshot", json!(null), Code::SchemaRejected),
        ("get_service_snapshot", json!([{"service": "checkout"}]), Code::SchemaRejected),
        ("get_service_snapshot", json!("checkout"), Code::SchemaRejected),
        ("get_service_snapshot", json!({}), Code::SchemaRejected),
        (
            "get_service_snapshot",
            Value::Object([("service".to_owned(), nested(5000))].into_iter().collect()),
            Code::SchemaRejected,
        ),
        ("get_service_snapshot", json!({"service": "a".repeat(1 << 20)}), Code::SchemaRejected),
        // A NUL no store can keep: refused at the gate's entry (issue 19), before the schema.
        ("get_service_snapshot", json!({"service": "check\u{0}out"}), Code::BadRequest),
        ("get_service_snapshot", json!({"service": "ｃｈｅｃｋｏｕｔ"}), Code::SchemaRejected),
        ("get_service_snapshot", json!({"service": true}), Code::SchemaRejected),
        ("scale_replicas", json!({"service": "checkout", "replicas": 1e308, "resource_version": 7}), Code::OutOfRange),
        (
            "scale_replicas",
            json!({"service": "checkout", "replicas": -9_223_372_036_854_775_808i64, "resource_version": 7}),
            Code::OutOfRange,
        ),
        (
            "scale_replicas",
            json!({"service": "checkout", "replicas": 18_446_744_073_709_551_615u64, "resource_version": 7}),
            Code::OutOfRange,
        ),
        (
            "scale_replicas",
            json!({"service": "checkout", "replicas": 3.5, "resource_version": 7}),
            Code::SchemaRejected,
        ),
        ("scale_replicas", json!({"service": "checkout", "replicas": 3, "resource_version": 0}), Code::SchemaRejected),
        // A version beyond what policy can represent cannot be evaluated: denied, never allowed.
        (
            "scale_replicas",
            json!({"service": "checkout", "replicas": 3, "resource_version": 1e300}),
            Code::PolicyDenied,
        ),
        ("../../etc/passwd", json!({}), Code::UnknownTool),
        ("", json!({}), Code::UnknownTool),
    ];
    let long_name = "x".repeat(1 << 20);
    let out = h.gate.call(&me, &run(), &CallRequest::new(&long_name, json!({}))).await.unwrap();
    assert_eq!(out.code(), Some(Code::UnknownTool));
    assert!(out.tool.len() < 100);
    for (i, (tool, args, code)) in cases.into_iter().enumerate() {
        let out = h.gate.call(&me, &run(), &CallRequest::new(tool, args)).await.unwrap();
        assert_eq!(out.code(), Some(code), "case {i}");
    }
    assert_eq!(h.adapter.changes_applied(), 0);
    assert!(h.gate.stores().jobs.unsettled().await.unwrap().is_empty(), "no job was half-written");
    let report = bridle_runtime::audit::verify(h.gate.stores().audit.as_ref()).await.unwrap();
    assert!(report.ok());
    assert_eq!(report.tenants[0].1, 18, "every refused call is audited");
    let longest = h
        .tool_calls()
        .await
        .iter()
        .map(|e| e.record.tool.len() + e.record.reason.as_ref().map_or(0, String::len))
        .max();
    assert!(longest < Some(2_000), "audit records stay small: {longest:?}");
}

#[test]
fn deeply_nested_json_text_is_refused_by_the_parser() {
    let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(serde_json::from_str::<Value>(&text).is_err());
}
