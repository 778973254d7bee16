//! `[adapters]` and `[tools.X] adapter`: a valid shape loads into routes; every mistake (unknown
//! adapter, placeholder naming no parameter, relative program, bad URL scheme …) is listed at once.
use bridle_core::config::{RequestBody, ToolRoute};

use super::support::load_example_with;

const ADAPTERS: &str = r#"
[adapters.http.checkout-api]
base_url = "https://checkout.internal/"
timeout_ms = 2000
status_path = "/jobs/{job_id}"

[adapters.command.scaler]
argv = ["/usr/local/bin/scale", "{service}", "--replicas", "{replicas}"]
env_allow = ["PATH"]
max_output_bytes = 4096
"#;

fn with(tool_lines: &[(&str, &str)], adapters: &str) -> String {
    let mut text = super::support::read_example("bridle.toml").unwrap();
    for (tool, lines) in tool_lines {
        let header = format!("[tools.{tool}]\n");
        text = text.replace(&header, &format!("{header}{lines}\n"));
    }
    format!("{text}\n{adapters}")
}

#[test]
fn configured_adapters_route_their_tools() {
    let text = with(
        &[
            (
                "get_service_snapshot",
                "adapter = \"http:checkout-api\"\nrequest = { method = \"get\", path = \"/services/{service}\" }",
            ),
            ("scale_replicas", "adapter = \"command:scaler\""),
        ],
        ADAPTERS,
    );
    let c = load_example_with(|_| text.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.adapters.http["checkout-api"].base_url, "https://checkout.internal");
    assert_eq!(
        c.adapters.routes["get_service_snapshot"],
        ToolRoute::Http {
            adapter: "checkout-api".into(),
            method: "GET".into(),
            path: "/services/{service}".into(),
            body: RequestBody::None
        }
    );
    assert_eq!(c.adapters.routes["scale_replicas"], ToolRoute::Command { adapter: "scaler".into() });
    assert!(!c.adapters.routes.contains_key("calculate"), "tools without `adapter` stay in process");
}

#[test]
fn every_adapter_error_is_listed_at_once() {
    let bad = r#"
[adapters.http.checkout-api]
base_url = "ftp://checkout.internal"
status_path = "/jobs/{job}"

[adapters.command.scaler]
argv = ["scale", "--service={service}", "{nope}"]
env_allow = ["path"]
timeout_ms = 0
"#;
    let text = with(
        &[
            (
                "get_service_snapshot",
                "adapter = \"http:checkout-api\"\nrequest = { method = \"TRACE\", path = \"/services/{svc}\" }",
            ),
            ("scale_replicas", "adapter = \"command:scaler\""),
            ("calculate", "adapter = \"http:nowhere\""),
        ],
        bad,
    );
    let errors = load_example_with(|_| text.clone()).unwrap_err();
    let listed = errors.to_string();
    for expected in [
        "adapters.http.checkout-api.base_url: `ftp://checkout.internal` is not an http:// or https:// URL",
        "adapters.http.checkout-api.status_path: placeholder `{job}` names no parameter",
        "adapters.command.scaler.argv: `scale` is not an absolute program path",
        "adapters.command.scaler.argv[1]: a placeholder must be a whole argument",
        "adapters.command.scaler.argv[2]: placeholder `{nope}` names no parameter of `scale_replicas`",
        "adapters.command.scaler.env_allow: `path` is not an environment variable name",
        "adapters.command.scaler.timeout_ms: must be between 1 and",
        "tools.get_service_snapshot.request.method: `TRACE` is not",
        "tools.get_service_snapshot.request.path: placeholder `{svc}` names no parameter",
        "tools.calculate.adapter: no adapter `http:nowhere`",
    ] {
        assert!(listed.contains(expected), "missing `{expected}` in:\n{listed}");
    }
}
