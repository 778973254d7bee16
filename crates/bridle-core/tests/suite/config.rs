//! Configuration: the example loads; bad configs list every problem at once.
use bridle_core::config::load;
use bridle_core::contract::Mode;
use bridle_core::principal::Principal;

use super::support::{checkout, load_example_with, read_example};

#[test]
fn example_loads_with_both_tools() {
    let c = checkout();
    assert!(c.registry.get("get_service_snapshot").is_some());
    assert!(c.registry.get("scale_replicas").is_some());
    assert_eq!(c.principals.len(), 5);
    for tool in ["search_law", "calculate", "convert_unit"] {
        let t = c.registry.get(tool).unwrap();
        assert_eq!((t.mode, t.scope.as_str(), t.executor.as_str()), (Mode::Read, "workbench:use", "workbench-reader"));
        assert_eq!(t.scanned_params().count(), 0, "{tool}");
    }
    assert_eq!(c.principals["workbench"].tenant, "workbench");
    assert_eq!(c.intake, bridle_core::answer::IntakeLimits { max_calls: 3, max_chars: 20_000 });
    assert!(c.policy.version().starts_with("sha256:"));
}

#[test]
fn model_tools_follow_scopes() {
    let c = checkout();
    let viewer = Principal::new("viewer-4", "tenant-a", &["checkout"], &["service:read"]);
    let names: Vec<_> = c.registry.model_tools(&viewer, &c.agents).iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["get_service_snapshot"]);
    let mcp = c.registry.mcp_tools(&viewer, &c.agents);
    assert_eq!(mcp[0]["inputSchema"]["additionalProperties"], false);
    let openai = c.registry.openai_tools(&c.principals["requester-1"], &c.agents);
    assert_eq!(openai.as_array().map(Vec::len), Some(2));
    assert_eq!(openai[1]["function"]["name"], "scale_replicas");
}

#[test]
fn an_agent_credential_sees_only_its_agents_tools() {
    let c = load_example_with(|t| {
        format!(
            "{t}\n[[agents]]\nid = \"watcher\"\nowner = \"sre\"\npurpose = \"reads\"\nmodel = \"m\"\nprompt = \"p\"\n\
             tools = [\"get_service_snapshot\"]\nrisk_ceiling = \"read\"\nprincipals = [\"bot-7\"]\n"
        )
    })
    .unwrap();
    let requester = c.principals["requester-1"].clone();
    let names = |p: &Principal| -> Vec<String> {
        c.registry.model_tools(p, &c.agents).iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(names(&requester), ["get_service_snapshot", "scale_replicas"]);
    assert_eq!(names(&requester.clone().with_agent("watcher")), ["get_service_snapshot"]);
    assert!(names(&requester.clone().with_agent("ghost")).is_empty(), "an unregistered agent may call nothing");
    let bound = Principal { subject: "bot-7".into(), ..requester };
    assert_eq!(names(&bound), ["get_service_snapshot"], "a bound subject is the agent's credential");
}

#[test]
fn mcp_tools_carry_annotations_from_the_contract_and_titles_are_bounded() {
    let c = load_example_with(|t| {
        t.replace(
            "[tools.scale_replicas]\n",
            "[tools.scale_replicas]\ntitle = \"Scale a service\"\nidempotent = true\n",
        )
        .replace("risk = \"limited_change\"", "risk = \"destructive\"")
        .replace("risk_ceiling = \"limited_change\"", "risk_ceiling = \"destructive\"")
    })
    .unwrap();
    let requester = c.principals["requester-1"].clone();
    let listed = c.registry.mcp_tools(&requester, &c.agents);
    let by_name = |n: &str| listed.as_array().unwrap().iter().find(|t| t["name"] == n).unwrap().clone();
    let scale = by_name("scale_replicas");
    assert_eq!(scale["title"], "Scale a service");
    assert_eq!(
        scale["annotations"],
        serde_json::json!({"title": "Scale a service", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true})
    );
    let read = by_name("get_service_snapshot");
    assert_eq!(read["annotations"], serde_json::json!({"title": "Get service snapshot", "readOnlyHint": true}));
    // A title is 1 to 120 printable characters.
    for bad in ["\"\"", "\"a\\u0007b\"", &format!("\"{}\"", "x".repeat(121))] {
        let err = load_example_with(|t| {
            t.replace("[tools.scale_replicas]\n", &format!("[tools.scale_replicas]\ntitle = {bad}\n"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("tools.scale_replicas.title"), "{bad}: {err}");
    }
}

#[test]
fn every_error_is_listed_at_once() {
    let err = load_example_with(|t| {
        t.replace("executor = \"reader-identity\"", "executor = \"changer-identity\"")
            .replace("min = 1\nmax = 5", "min = 9\nmax = 5")
            .replace("field = \"replicas\" }", "field = \"replicas\" }\nscan = true")
            .replace("timeout_ms = 2000", "timeout_ms = 0")
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("tools.get_service_snapshot.executor"), "{text}");
    assert!(text.contains("min 9 is above max 5"), "{text}");
    assert!(text.contains("`scan` applies to string parameters"), "{text}");
    assert!(text.contains("tools.get_service_snapshot.timeout_ms"), "{text}");
    assert!(err.0.len() >= 4, "{text}");
}

#[test]
fn unknown_fields_and_bad_toml_are_refused() {
    let err = load_example_with(|t| t.replace("[approvals]", "[approvals]\nttl_sekonds = 3")).unwrap_err();
    assert!(err.to_string().contains("ttl_sekonds"), "{err}");
    let err = load("[[[", &read_example).unwrap_err();
    assert_eq!(err.0.len(), 1);
}

#[test]
fn open_schema_is_refused_at_load() {
    let err = load_example_with(|t| {
        t.replace(
            "schema = \"schemas/service_ref.json\"",
            "input_schema = { type = \"object\", properties = { service = { type = \"string\" } } }",
        )
    })
    .unwrap_err();
    assert!(err.to_string().contains("allows unknown properties"), "{err}");
}

#[test]
fn a_broken_policy_fails_closed_with_reasons() {
    let files = |p: &str| {
        if p == "policies/tenancy.cedar" {
            Ok("permit (principal, action, resource) when { context.nope };".into())
        } else {
            read_example(p)
        }
    };
    let err = load(&read_example("bridle.toml").unwrap(), &files).unwrap_err();
    assert!(err.to_string().contains("policy"), "{err}");
}

#[test]
fn a_policy_that_breaks_an_expectation_fails_load() {
    let files = |p: &str| {
        if p == "policies/tenancy.cedar" { Ok("permit (principal, action, resource);".into()) } else { read_example(p) }
    };
    let err = load(&read_example("bridle.toml").unwrap(), &files).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("requester cannot read a service it does not hold"), "{text}");
    assert!(text.contains("a read-only principal cannot change"), "{text}");
}

#[test]
fn a_tool_missing_from_the_cedar_schema_fails_load() {
    let err = load_example_with(|t| t.replace("[tools.scale_replicas]", "[tools.scale_replicas2]\ndescription = \"x\"\nmode = \"read\"\nscope = \"s\"\nrisk = \"read\"\nexecutor = \"reader-identity\"\nschema = \"schemas/service_ref.json\"\n\n[tools.scale_replicas]")).unwrap_err();
    assert!(err.to_string().contains("tool `scale_replicas2` has no action"), "{err}");
}

#[test]
fn intake_limits_are_validated() {
    let err = load_example_with(|t| {
        t.replace("max_calls = 3", "max_calls = 0").replace("max_chars = 20000", "max_chars = 0")
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("intake.max_calls: must be between 1 and 100"), "{err}");
    assert!(err.contains("intake.max_chars: must be between 1 and 1000000"), "{err}");
    let err = load_example_with(|t| t.replace("max_calls = 3", "max_calls = 3\nmax_cals = 2")).unwrap_err();
    assert!(err.to_string().contains("max_cals"), "{err}");
    let c = load_example_with(|t| t.replace("max_calls = 3", "max_calls = 7")).unwrap();
    assert_eq!(c.intake.max_calls, 7);
}

#[test]
fn webhooks_are_validated() {
    let with = |section: &str| load_example_with(|t| format!("{t}\n[webhooks]\n{section}\n"));
    let err = with("approval_requested = \"ftp://ops.example/x\"\nsecret_env = \"lower-case\"\nretries = 99")
        .unwrap_err()
        .to_string();
    assert!(err.contains("webhooks.approval_requested: `ftp://ops.example/x` is not an http"), "{err}");
    assert!(err.contains("webhooks.secret_env"), "{err}");
    assert!(err.contains("webhooks.retries: must be at most 10"), "{err}");
    assert!(
        with("approval_requested = \"https://x\"\nsecret = \"inline\"").is_err(),
        "a secret is never written in the file"
    );
    let c =
        with("approval_requested = \"https://ops.example/bridle\"\nconsole_url = \"https://bridle.example/console/\"")
            .unwrap();
    assert_eq!(c.webhooks.approval_requested.as_deref(), Some("https://ops.example/bridle"));
    assert_eq!(c.webhooks.secret_env, "BRIDLE_WEBHOOK_SECRET");
    assert_eq!(c.webhooks.console_url.as_deref(), Some("https://bridle.example/console"));
    assert_eq!(checkout().webhooks.approval_requested, None);
}

#[test]
fn the_server_section_sets_listen_and_limits_and_lists_its_errors() {
    let c = checkout();
    assert_eq!((c.server.listen.clone(), c.server.burst, c.server.max_json_depth), (None, 100, 64));
    let c = load_example_with(|t| {
        format!("{t}\n[server]\nlisten = \"0.0.0.0:9000\"\nrate_per_second = 500.0\nburst = 1000\nrequest_timeout_ms = 5000\n")
    })
    .unwrap();
    assert_eq!(c.server.listen.as_deref(), Some("0.0.0.0:9000"));
    assert_eq!((c.server.rate_per_second, c.server.burst), (500.0, 1000));
    assert_eq!(c.server.request_timeout.as_millis(), 5000);
    let err = load_example_with(|t| {
        format!("{t}\n[server]\nlisten = \"everywhere\"\nrate_per_second = 0.0\nburst = 0\nmax_json_depth = 1\nmax_body_bytes = 10\n")
    })
    .unwrap_err()
    .to_string();
    for field in
        ["server.listen", "server.rate_per_second", "server.burst", "server.max_json_depth", "server.max_body_bytes"]
    {
        assert!(err.contains(field), "missing {field} in {err}");
    }
}

#[test]
fn drift_watch_settings_are_checked_and_off_by_default() {
    let off = load_example_with(|t| t).unwrap();
    assert_eq!(off.drift.interval, None);
    let on = load_example_with(|t| {
        t + "\n[drift]\ninterval_seconds = 300\ntenants = [\"fab-1\"]\nmetrics = [\"confidence\"]\ncritical = 5\n"
    })
    .unwrap();
    assert_eq!(on.drift.interval, Some(std::time::Duration::from_secs(300)));
    assert_eq!((on.drift.params.critical, on.drift.params.warning, on.drift.limit), (5.0, 2.5, 10_000));
    let errors = load_example_with(|t| {
        t + "\n[drift]\ninterval_seconds = 1\nmetrics = [\"mood\"]\nwarning = 4\ncritical = 3\nwebhook = \"ftp://x\"\n"
    })
    .unwrap_err();
    let at: Vec<&str> = errors.0.iter().map(|e| e.at.as_str()).collect();
    for field in ["drift.interval_seconds", "drift.tenants", "drift.metrics", "drift.critical", "drift.webhook"] {
        assert!(at.contains(&field), "{field} in {at:?}");
    }
}
