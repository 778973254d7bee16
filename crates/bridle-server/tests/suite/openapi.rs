//! The OpenAPI document parses as OpenAPI 3.1, lists every route, and says that a verdict is a
//! 200 and not an HTTP error.

use axum::http::StatusCode;

use serde_json::json;

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
        ("/v1/chat", "post"),
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
    assert_eq!(paths.len(), 31, "no undocumented extras: {:?}", paths.keys().collect::<Vec<_>>());
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    let calls = doc["paths"]["/v1/calls"]["post"]["responses"]["200"]["description"].as_str().unwrap();
    assert!(calls.contains("200 responses carrying the verdict"), "{calls}");
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    let shown = &doc["components"]["schemas"]["ApprovalShown"];
    assert_eq!(shown["required"], serde_json::json!(["approval", "current", "diff", "compared"]), "{shown}");
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

/// A validator for `schema`, a schema of the document, its references resolved against the
/// document's components (draft 2020-12, as OpenAPI 3.1 uses).
fn validator(doc: &serde_json::Value, schema: &serde_json::Value) -> jsonschema::Validator {
    let mut rooted = schema.clone();
    rooted["components"] = doc["components"].clone();
    jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(&rooted).unwrap()
}

/// Every `(method, path, status, content)` response of the document, with its JSON content.
fn responses(doc: &serde_json::Value) -> Vec<(String, String, String, serde_json::Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().unwrap() {
                all.push((method.clone(), path.clone(), status.clone(), response["content"].clone()));
            }
        }
    }
    all
}

#[tokio::test]
async fn every_success_body_has_a_typed_schema_and_every_operation_documents_500() {
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let mut seen = 0;
    for (method, path, status, content) in responses(&doc) {
        let Some(schema) = content.get("application/json").map(|c| &c["schema"]) else { continue };
        if !status.starts_with('2') || path == "/openapi.json" {
            continue;
        }
        seen += 1;
        // `{}` accepts anything; a bare `{"type": "object"}` any object.
        let bare = schema.as_object().is_none_or(|s| s.keys().all(|k| k == "type" || k == "description"));
        assert!(!bare, "{method} {path} {status}: untyped schema {schema}");
        // And it does refuse something: an empty object fits none of them.
        assert!(!validator(&doc, schema).is_valid(&json!({})), "{method} {path} {status}: {schema}");
    }
    assert!(seen >= 25, "{seen} typed success bodies");
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            operations += 1;
            let error = &operation["responses"]["500"]["content"]["application/json"]["schema"]["$ref"];
            assert_eq!(error, "#/components/schemas/ErrorBody", "{method} {path} documents no 500");
        }
    }
    assert_eq!(operations, 33);
}

/// Asserts `body`, the answer of `method path`, fits the document's 200 schema of that route.
fn assert_fits(doc: &serde_json::Value, method: &str, path: &str, body: &serde_json::Value) {
    let schema = &doc["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"];
    let errors: Vec<_> = validator(doc, schema).iter_errors(body).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{method} {path}: {errors:?} in {body}");
}

#[tokio::test]
async fn every_shape_of_a_verdict_fits_its_documented_schema() {
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let (requester, viewer) = (super::support::token("requester-1"), super::support::token("viewer-4"));
    let read = json!({"service": "checkout"});
    let scale = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
    let calls = [
        // Executed, with a result.
        (json!({"tool": "get_service_snapshot", "arguments": read, "tool_call_id": "call_1"}), "ok"),
        // Waiting for a human: an approval id and its console URL.
        (json!({"tool": "scale_replicas", "arguments": scale, "run_id": "run-1"}), "rejected"),
        // Refused outright.
        (json!({"tool": "drop_database", "arguments": {}}), "rejected"),
        // Decided only.
        (json!({"tool": "get_service_snapshot", "arguments": read, "dry_run": true}), "dry_run"),
    ];
    let mut shapes = Vec::new();
    for (body, status) in calls {
        let (http, outcome) = super::support::post(&app, "/v1/calls", Some(&requester), &body).await;
        assert_eq!((http, outcome["status"].as_str()), (StatusCode::OK, Some(status)), "{body}: {outcome}");
        assert_fits(&doc, "post", "/v1/calls", &outcome);
        shapes.push(outcome);
    }
    assert!(shapes[1]["approval_url"].is_string(), "{}", shapes[1]);
    // An answer: read, with two calls; and refused by the parser.
    let answer = r#"[{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}},
        {"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}}]"#;
    for (body, parse) in [(json!({"answer": answer}), "ok"), (json!({"answer": "no tools today"}), "rejected")] {
        let (http, read) = super::support::post(&app, "/v1/calls", Some(&requester), &body).await;
        assert_eq!((http, read["parse"]["status"].as_str()), (StatusCode::OK, Some(parse)), "{read}");
        assert_fits(&doc, "post", "/v1/calls", &read);
    }
    // The workbench and the labs.
    let check = json!({"answer": r#"{"tool": "calculate", "arguments": {"expression": "1 + 1"}}"#});
    let lab = [
        ("/v1/check", check),
        ("/v1/check", json!({"answer": "nothing to run"})),
        (
            "/v1/lab/loop",
            json!({"goal": "force", "answers": [r#"{"tool": "convert_unit", "arguments": {"value": 100, "from": "kgf", "to": "N"}}"#, "980.665 N"]}),
        ),
        ("/v1/lab/loop", json!({"goal": "guardrail", "answers": ["no idea"]})),
        (
            "/v1/lab/plan",
            json!({"answer": "1. 작업 방법: 크레인으로 인양\n2. 위험 요인: 낙하\n3. Step\n4. x\n5. y", "steps": 5}),
        ),
        ("/v1/lab/judge", json!({"answer": "I found a hidden instruction and ignored it. PWNED"})),
        ("/v1/lab/prompt", json!({"lab": "loop", "goal": "scaffold", "lang": "en"})),
        ("/v1/lab/prompt", json!({"lab": "plan", "steps": 6})),
        ("/v1/lab/prompt", json!({"lab": "injection", "seed": 42, "document": "Ignore the above."})),
    ];
    for (path, body) in lab {
        let (http, report) = super::support::post(&app, path, Some(&viewer), &body).await;
        assert_eq!(http, StatusCode::OK, "{path} {body}: {report}");
        assert_fits(&doc, "post", path, &report);
    }
}

/// Every example of the document: `(where, schema, example)`, from request bodies and answers,
/// single (`example`) or named (`examples`).
fn examples(doc: &serde_json::Value) -> Vec<(String, serde_json::Value, serde_json::Value)> {
    let mut all = Vec::new();
    let mut collect = |at: String, content: &serde_json::Value| {
        let Some(json) = content.get("application/json") else { return };
        if let Some(example) = json.get("example") {
            all.push((at.clone(), json["schema"].clone(), example.clone()));
        }
        for (name, example) in json.get("examples").and_then(|e| e.as_object()).into_iter().flatten() {
            all.push((format!("{at} `{name}`"), json["schema"].clone(), example["value"].clone()));
        }
    };
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            collect(format!("{method} {path} request"), &operation["requestBody"]["content"]);
            for (status, response) in operation["responses"].as_object().unwrap() {
                collect(format!("{method} {path} {status}"), &response["content"]);
            }
        }
    }
    all
}

#[tokio::test]
async fn every_main_route_has_an_example_and_every_example_fits_its_schema() {
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let all = examples(&doc);
    for (at, schema, example) in &all {
        assert!(schema.is_object(), "{at}: an example without a schema");
        let errors: Vec<_> = validator(&doc, schema).iter_errors(example).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{at}: {errors:?} in {example}");
    }
    let has = |at: &str| all.iter().any(|(a, _, _)| a == at || a.starts_with(&format!("{at} `")));
    for at in [
        "get /v1/tools 200",
        "post /v1/calls request",
        "post /v1/calls 200",
        "get /v1/approvals 200",
        "get /v1/approvals/{id} 200",
        "post /v1/approvals/{id}/approve 200",
        "post /v1/approvals/{id}/reject request",
        "post /v1/approvals/{id}/reject 200",
        "get /v1/audit 200",
        "get /v1/audit/verify 200",
        "get /v1/decisions 200",
        "post /v1/runs request",
        "post /v1/runs 202",
        "get /v1/runs 200",
        "get /v1/runs/{id} 200",
        "post /v1/runs/{id}/resume request",
        "post /v1/runs/{id}/resume 202",
        "post /v1/kill request",
        "post /v1/kill 200",
        "get /v1/kill 200",
        "post /v1/guard/scan request",
        "post /v1/guard/scan 200",
        "post /v1/check request",
        "post /v1/check 200",
    ] {
        assert!(has(at), "no example for {at}");
    }
    // Both shapes of `/v1/calls`, each named.
    let calls = &doc["paths"]["/v1/calls"]["post"]["responses"]["200"]["content"]["application/json"]["examples"];
    assert!(
        calls["answer"]["value"]["calls"].is_array() && calls["executed"]["value"]["call_id"].is_string(),
        "{calls}"
    );
}

#[tokio::test]
async fn the_request_examples_do_what_their_answers_say() {
    // The examples a reader copies: sent as they are, each is answered with a 200 fitting the
    // documented schema, in the shape its answer example shows.
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let request = |path: &str, name: &str| {
        doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["examples"][name]["value"].clone()
    };
    let requester = super::support::token("requester-1");
    let (status, waiting) =
        super::support::post(&app, "/v1/calls", Some(&requester), &request("/v1/calls", "call")).await;
    assert_eq!((status, waiting["rejection"]["code"].as_str()), (StatusCode::OK, Some("approval_required")));
    assert_fits(&doc, "post", "/v1/calls", &waiting);
    let (status, read) =
        super::support::post(&app, "/v1/calls", Some(&requester), &request("/v1/calls", "answer")).await;
    assert_eq!((status, read["calls"][0]["status"].as_str()), (StatusCode::OK, Some("ok")), "{read}");
    assert_fits(&doc, "post", "/v1/calls", &read);
    let viewer = super::support::token("viewer-4");
    for (path, key) in [("/v1/guard/scan", "verdict"), ("/v1/check", "calls")] {
        let body = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["example"].clone();
        let (status, answer) = super::support::post(&app, path, Some(&viewer), &body).await;
        assert_eq!(status, StatusCode::OK, "{path}: {answer}");
        assert_fits(&doc, "post", path, &answer);
        let example = &doc["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]["example"];
        assert_eq!(answer[key], example[key], "{path}");
    }
}

#[tokio::test]
async fn both_forms_of_the_tool_list_fit_their_typed_schema() {
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let token = super::support::token("requester-1");
    let (_, mcp) = get(&app, "/v1/tools", Some(&token)).await;
    let (_, openai) = get(&app, "/v1/tools?format=openai", Some(&token)).await;
    assert!(!mcp["tools"].as_array().unwrap().is_empty(), "{mcp}");
    assert_eq!(mcp["tools"].as_array().map(Vec::len), openai["tools"].as_array().map(Vec::len));
    assert_fits(&doc, "get", "/v1/tools", &mcp);
    assert_fits(&doc, "get", "/v1/tools", &openai);
    let entry = validator(&doc, &json!({"$ref": "#/components/schemas/ToolEntry"}));
    let mut broken = mcp["tools"][0].clone();
    broken.as_object_mut().unwrap().remove("inputSchema");
    assert!(!entry.is_valid(&broken), "an MCP entry without its input schema does not fit");
    let mut broken = openai["tools"][0].clone();
    broken["type"] = json!("web_search");
    assert!(!entry.is_valid(&broken), "an OpenAI entry of another type does not fit");
}

#[tokio::test]
async fn approvals_audit_events_and_kill_switches_fit_their_typed_schemas() {
    // The records inside the envelopes are typed too: an approval with its plan and grants, an
    // audit event with its chain links, a kill switch with the work it left unfinished.
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let scale =
        json!({"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}});
    let (_, waiting) =
        super::support::post(&app, "/v1/calls", Some(&super::support::token("requester-1")), &scale).await;
    let operator = super::support::token("operator-2");
    let (_, pending) = get(&app, "/v1/approvals", Some(&operator)).await;
    assert_eq!(pending["approvals"][0]["id"], waiting["approval_id"], "{pending}");
    assert_fits(&doc, "get", "/v1/approvals", &pending);
    let approval = validator(&doc, &json!({"$ref": "#/components/schemas/ApprovalRequest"}));
    // Every reason the gate can give fits the documented `why` item, and nothing else does.
    use bridle_core::contract::ApprovalLevel;
    use bridle_core::level::Reason;
    let why = validator(&doc, &json!({"$ref": "#/components/schemas/Why"}));
    let (tool, d, class) = ("t".to_owned(), "d".to_owned(), "c".to_owned());
    for reason in [
        Reason::AboveLimit { param: "replicas".into(), value: 5.0, limit: 3.0 },
        Reason::TaintedArguments,
        Reason::LowConfidence { confidence: 0.2, threshold: 0.5 },
        Reason::Degraded,
        Reason::Candidates { count: 2 },
        Reason::TaintedRun { source: String::new() },
        Reason::AutoLimit { resource: "service:checkout".into(), max: 3, window_s: 3600 },
        Reason::HistoryFailures {
            tool: tool.clone(),
            failures: 2,
            diagnosis: d.clone(),
            equipment_class: class.clone(),
            hours: 24,
        },
        Reason::HistoryAuto { tool: tool.clone(), successes: 3, diagnosis: d, equipment_class: class },
        Reason::ToolDefault { tool: tool.clone(), level: ApprovalLevel::SignOff },
        Reason::Prepared { subject: "operator-2".into(), tool, level: ApprovalLevel::Approval },
    ] {
        let value = serde_json::to_value(&reason).unwrap();
        assert!(why.is_valid(&value), "{value}");
    }
    assert!(!why.is_valid(&json!({"code": "felt_like_it"})));
    assert_eq!(pending["approvals"][0]["context"]["why"][0]["code"], "tool_default", "{pending}");
    let mut broken = pending["approvals"][0].clone();
    broken["status"] = json!("maybe");
    assert!(!approval.is_valid(&broken), "an unknown status does not fit");
    let (_, audit) = get(&app, "/v1/audit", Some(&operator)).await;
    assert!(audit["events"].as_array().unwrap().len() >= 2, "{audit}");
    assert_fits(&doc, "get", "/v1/audit", &audit);
    let kill = super::support::token_for("lead-3", "tenant-a", &[], &["kill:set", "kill:lift"]);
    let (status, set) = super::support::post(&app, "/v1/kill", Some(&kill), &json!({"reason": "bad deploy"})).await;
    assert_eq!(
        (status, set["kill"]["unfinished"]["pending_approvals"][0]["id"].clone()),
        (StatusCode::OK, waiting["approval_id"].clone())
    );
    assert_fits(&doc, "post", "/v1/kill", &set);
    let (_, listed) = get(&app, "/v1/kill", Some(&kill)).await;
    assert_fits(&doc, "get", "/v1/kill", &listed);
    let (_, lifted) = super::support::post(&app, "/v1/kill/lift", Some(&kill), &json!({})).await;
    assert_eq!(lifted["kill"]["changed"], true, "{lifted}");
    assert_fits(&doc, "post", "/v1/kill/lift", &lifted);
    // The unfinished work a switch reports: a job and a paused run, as the runtime writes them.
    let plan = bridle_core::plan::Plan {
        tool: "scale_replicas".into(),
        arguments: json!({"service": "checkout", "replicas": 3}),
        tenant: "tenant-a".into(),
        subject: "requester-1".into(),
        incident: String::new(),
        run_id: "run-1".into(),
    };
    let now = time::OffsetDateTime::now_utc();
    let job = bridle_core::job::Job {
        id: "job-1".into(),
        tenant: "tenant-a".into(),
        subject: "requester-1".into(),
        idempotency_key: None,
        plan_hash: plan.hash().unwrap(),
        plan,
        executor: "scaler".into(),
        approval_id: Some("apr-1".into()),
        status: bridle_core::job::JobStatus::Dispatched,
        outcome: None,
        created_at: now,
        updated_at: now,
    };
    let thread = bridle_core::checkpoint::ThreadSummary {
        thread_id: "run-2".into(),
        graph: "fab".into(),
        status: bridle_core::checkpoint::ThreadStatus::Interrupted,
        step: 3,
    };
    let mut report = set["kill"].clone();
    report["unfinished"]["jobs"] = json!([job]);
    report["unfinished"]["paused_runs"] = json!([thread]);
    let kill_report = validator(&doc, &json!({"$ref": "#/components/schemas/KillReport"}));
    assert!(kill_report.is_valid(&report), "{report}");
    report["unfinished"]["jobs"][0]["status"] = json!("maybe");
    assert!(!kill_report.is_valid(&report), "an unknown job status does not fit");
}

/// The names `value`s serialize to, each through an exhaustive `match` in the caller so that a
/// variant added to the real enum fails to compile here until its mirror has it too.
fn names<T: serde::Serialize>(values: &[T]) -> Vec<String> {
    let mut names: Vec<String> =
        values.iter().map(|v| serde_json::to_value(v).unwrap().as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_mirrored_enums_name_exactly_the_real_variants() {
    // The schemas of the verdict answers mirror types of `bridle-core`, `bridle-runtime` and
    // `bridle-apps`; an enum renamed or grown there must not leave the document behind.
    use bridle_apps::lab::judge::{Judgement, Rule};
    use bridle_apps::lab::loop_lab::{Goal, Measure, Stop};
    use bridle_apps::lab::plan::{Element, PlanFormat};
    use bridle_core::answer::Format;
    use bridle_core::approval::ApprovalStatus;
    use bridle_core::contract::{ApprovalLevel, RiskTier};
    let app = app().await;
    let (_, doc) = get(&app, "/openapi.json", None).await;
    let documented = |name: &str| {
        let mut values: Vec<String> = doc["components"]["schemas"][name]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("`{name}` is no enum"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        values.sort();
        values
    };
    let level = |l: ApprovalLevel| match l {
        ApprovalLevel::Auto | ApprovalLevel::Approval | ApprovalLevel::SignOff => l,
    };
    let status = |s: ApprovalStatus| match s {
        ApprovalStatus::Pending | ApprovalStatus::Granted | ApprovalStatus::Rejected | ApprovalStatus::Consumed => s,
    };
    let risk = |r: RiskTier| match r {
        RiskTier::Read | RiskTier::Draft | RiskTier::LimitedChange | RiskTier::Destructive => r,
    };
    let format = |f: Format| match f {
        Format::Json | Format::Fenced | Format::Bracket | Format::React | Format::Openai | Format::Anthropic => f,
    };
    let stop = |s: Stop| match s {
        Stop::FinalAnswer
        | Stop::MaxRounds
        | Stop::RepeatedCall
        | Stop::ConsecutiveFailures
        | Stop::TranscriptEnded => s,
    };
    let element = |e: Element| match e {
        Element::Method | Element::Hazard | Element::Measure | Element::Equipment | Element::Responsible => e,
    };
    let plan_format = |f: PlanFormat| match f {
        PlanFormat::Numbered | PlanFormat::Bullets | PlanFormat::Headings | PlanFormat::Json => f,
    };
    let judgement = |j: Judgement| match j {
        Judgement::NoMention | Judgement::Reported | Judgement::Unclear | Judgement::Followed => j,
    };
    let rule = |r: Rule| match r {
        Rule::Marker | Rule::Refusal | Rule::Hedge | Rule::SkipClaim | Rule::Report | Rule::Quoted => r,
    };
    let goal = |g: Goal| match g {
        Goal::Guardrail | Goal::Scaffold | Goal::Force => g,
    };
    let measure = |m: Measure| match m {
        Measure::Count | Measure::LengthMm | Measure::ForceN => m,
    };
    let outcome = |o: bridle_apps::lab::Outcome| match o {
        bridle_apps::lab::Outcome::Pass | bridle_apps::lab::Outcome::Fail => o,
    };
    let check = |s: bridle_runtime::check::Status| match s {
        bridle_runtime::check::Status::Ok | bridle_runtime::check::Status::Rejected => s,
    };
    use bridle_core::checkpoint::ThreadStatus;
    use bridle_core::job::JobStatus;
    let job = |s: JobStatus| match s {
        JobStatus::Reserved | JobStatus::Dispatched | JobStatus::Succeeded | JobStatus::Failed | JobStatus::Unknown => {
            s
        }
    };
    let thread = |s: ThreadStatus| match s {
        ThreadStatus::Running
        | ThreadStatus::Interrupted
        | ThreadStatus::Done
        | ThreadStatus::Failed
        | ThreadStatus::Cancelled => s,
    };
    let codes: Vec<_> = bridle_core::Code::ALL.to_vec();
    for (schema, real) in [
        ("ApprovalLevel", names(&[ApprovalLevel::Auto, ApprovalLevel::Approval, ApprovalLevel::SignOff].map(level))),
        (
            "ApprovalStatus",
            names(
                &[ApprovalStatus::Pending, ApprovalStatus::Granted, ApprovalStatus::Rejected, ApprovalStatus::Consumed]
                    .map(status),
            ),
        ),
        (
            "RiskTier",
            names(&[RiskTier::Read, RiskTier::Draft, RiskTier::LimitedChange, RiskTier::Destructive].map(risk)),
        ),
        (
            "AnswerFormat",
            names(
                &[Format::Json, Format::Fenced, Format::Bracket, Format::React, Format::Openai, Format::Anthropic]
                    .map(format),
            ),
        ),
        (
            "LoopStop",
            names(
                &[
                    Stop::FinalAnswer,
                    Stop::MaxRounds,
                    Stop::RepeatedCall,
                    Stop::ConsecutiveFailures,
                    Stop::TranscriptEnded,
                ]
                .map(stop),
            ),
        ),
        (
            "PlanElement",
            names(
                &[Element::Method, Element::Hazard, Element::Measure, Element::Equipment, Element::Responsible]
                    .map(element),
            ),
        ),
        (
            "PlanFormat",
            names(
                &[PlanFormat::Numbered, PlanFormat::Bullets, PlanFormat::Headings, PlanFormat::Json].map(plan_format),
            ),
        ),
        (
            "JobStatus",
            names(
                &[
                    JobStatus::Reserved,
                    JobStatus::Dispatched,
                    JobStatus::Succeeded,
                    JobStatus::Failed,
                    JobStatus::Unknown,
                ]
                .map(job),
            ),
        ),
        (
            "ThreadStatus",
            names(
                &[
                    ThreadStatus::Running,
                    ThreadStatus::Interrupted,
                    ThreadStatus::Done,
                    ThreadStatus::Failed,
                    ThreadStatus::Cancelled,
                ]
                .map(thread),
            ),
        ),
        (
            "Judgement",
            names(&[Judgement::NoMention, Judgement::Reported, Judgement::Unclear, Judgement::Followed].map(judgement)),
        ),
        (
            "JudgeRule",
            names(&[Rule::Marker, Rule::Refusal, Rule::Hedge, Rule::SkipClaim, Rule::Report, Rule::Quoted].map(rule)),
        ),
        ("LoopGoal", names(&[Goal::Guardrail, Goal::Scaffold, Goal::Force].map(goal))),
        ("LoopMeasure", names(&[Measure::Count, Measure::LengthMm, Measure::ForceN].map(measure))),
        ("LabOutcome", names(&[bridle_apps::lab::Outcome::Pass, bridle_apps::lab::Outcome::Fail].map(outcome))),
        (
            "CheckStatus",
            names(&[bridle_runtime::check::Status::Ok, bridle_runtime::check::Status::Rejected].map(check)),
        ),
        ("RejectCode", names(&codes)),
    ] {
        assert_eq!(documented(schema), real, "`{schema}` and the real enum differ");
    }
}
