//! The OpenAPI document parses as OpenAPI 3.1, lists every route, and says that a verdict is a
//! 200 and not an HTTP error.

use axum::http::StatusCode;

use super::support::{app, get};

#[tokio::test]
async fn the_document_lists_every_route() {
    let app = app().await;
    let (status, doc) = get(&app, "/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/openapi.json", "get"),
        ("/v1/tools", "get"),
        ("/v1/calls", "post"),
        ("/v1/approvals", "get"),
        ("/v1/approvals/{id}", "get"),
        ("/v1/approvals/{id}/approve", "post"),
        ("/v1/approvals/{id}/reject", "post"),
        ("/v1/audit", "get"),
        ("/v1/guard/scan", "post"),
        ("/v1/check", "post"),
        ("/v1/lab/loop", "post"),
        ("/v1/lab/plan", "post"),
        ("/v1/lab/judge", "post"),
        ("/v1/lab/prompt", "post"),
        ("/metrics", "get"),
        ("/v1/runs", "post"),
        ("/v1/runs", "get"),
        ("/v1/runs/{id}", "get"),
        ("/v1/runs/{id}/events", "get"),
        ("/v1/runs/{id}/resume", "post"),
        ("/v1/decisions", "get"),
        ("/v1/approvals/events", "get"),
        ("/v1/audit/verify", "get"),
        ("/v1/drift", "get"),
        ("/v1/decisions/{id}/feedback", "post"),
        ("/v1/feedback", "get"),
        ("/v1/kill", "post"),
        ("/v1/kill", "get"),
        ("/v1/kill/lift", "post"),
        ("/v1/actions/{job_id}/outcome", "post"),
    ] {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} missing");
    }
    assert_eq!(paths.len(), 30, "no undocumented extras: {:?}", paths.keys().collect::<Vec<_>>());
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    let calls = doc["paths"]["/v1/calls"]["post"]["responses"]["200"]["description"].as_str().unwrap();
    assert!(calls.contains("200 responses carrying the verdict"), "{calls}");
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    let shown = &doc["components"]["schemas"]["ApprovalShown"];
    assert_eq!(shown["required"], serde_json::json!(["approval", "current", "diff"]), "{shown}");
    assert_eq!(shown["properties"]["diff"]["items"]["$ref"], "#/components/schemas/FieldChange", "{shown}");
    let field = &doc["components"]["schemas"]["FieldChange"];
    assert_eq!(field["required"], serde_json::json!(["field", "current", "proposed"]), "{field}");
}

#[tokio::test]
async fn tagged_bodies_are_closed_objects_and_every_reference_resolves() {
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let schemas = &doc["components"]["schemas"];
    for name in ["StartBody", "LoopBody"] {
        let variants = schemas[name]["oneOf"].as_array().unwrap();
        assert!(variants.len() >= 2, "{name}");
        for v in variants {
            assert_eq!(v["additionalProperties"], false, "{name}: {v}");
        }
    }
    // Every `$ref` names a component that exists.
    let text = doc.to_string();
    for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let target = piece.split('"').next().unwrap();
        assert!(schemas.get(target).is_some(), "dangling $ref to {target}");
    }
}
