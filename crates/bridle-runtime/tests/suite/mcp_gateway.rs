//! The MCP gateway: tools of an upstream MCP server (this test binary re-executed as a tiny
//! stdio server, see `upstream_child`) imported under Bridle contracts and called through the
//! gate — a read passes, the change needs approval, an upstream `isError` is `adapter_failed`
//! (clipped and masked), a contract that does not match the upstream schema fails.

use std::io::{BufRead, Write};
use std::sync::Arc;

use bridle_core::Code;
use bridle_core::config::{Config, ToolRoute, load};
use bridle_runtime::Verdict;
use bridle_runtime::clock::ManualClock;
use bridle_runtime::gate::{CallRequest, Gate};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};
use time::Duration as TimeDuration;

use super::support::{T0, rejection, run};

const SCHEMA: &str = r#"
namespace Bridle {
  entity Principal = { tenant: String, services: Set<String>, scopes: Set<String> };
  entity Resource = { tenant: String, kind: String, name: String };
  action lookup appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String, arguments: { item: String } } };
  action restock appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String, arguments: { item: String, qty: Long } } };
  action drifted appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String, arguments: { item: String } } };
}
"#;

const POLICY: &str = r#"
@id("items-held")
permit (principal, action, resource)
when { resource.tenant == principal.tenant && principal.scopes.contains(context.scope)
       && principal.services.contains(resource.name) };
"#;

fn config_toml(exe: &str) -> String {
    format!(
        r#"
[policy]
schema = "t.cedarschema"
files = ["t.cedar"]

[executors.up-reader]
mode = "read"
[executors.up-changer]
mode = "change"

[adapters.mcp.upstream]
# The test harness prints its own lines on stdout: keep only the protocol's.
command = ["/bin/sh", "-c", "\"$0\" --ignored --exact suite::mcp_gateway::upstream_child --nocapture --test-threads=1 | grep --line-buffered '^{{'", "{exe}"]
env_allow = ["PATH"]
timeout_ms = 5000

[tools.lookup]
description = "Look an item up."
mode = "read"
scope = "shop:read"
risk = "read"
executor = "up-reader"
adapter = "mcp:upstream"
upstream_tool = "get_item"
untrusted_output = true
resource = {{ kind = "item", param = "item" }}
input_schema = {{ type = "object", additionalProperties = false, required = ["item"], properties = {{ item = {{ type = "string" }} }} }}

[tools.restock]
description = "Restock an item."
mode = "change"
scope = "shop:change"
risk = "limited_change"
executor = "up-changer"
approval = "approval"
adapter = "mcp:upstream"
resource = {{ kind = "item", param = "item" }}
input_schema = {{ type = "object", additionalProperties = false, required = ["item", "qty"], properties = {{ item = {{ type = "string" }}, qty = {{ type = "integer" }} }} }}

[tools.drifted]
description = "A contract the upstream does not match."
mode = "read"
scope = "shop:read"
risk = "read"
executor = "up-reader"
adapter = "mcp:upstream"
upstream_tool = "get_item"
resource = {{ kind = "item", param = "item" }}
input_schema = {{ type = "object", additionalProperties = false, required = ["item"], properties = {{ item = {{ type = "string" }}, extra = {{ type = "string" }} }} }}

[principals.clerk]
tenant = "shop-1"
services = ["widget", "boom"]
scopes = ["shop:read", "shop:change"]
"#
    )
}

fn files(p: &str) -> Result<String, String> {
    match p {
        "t.cedarschema" => Ok(SCHEMA.to_owned()),
        "t.cedar" => Ok(POLICY.to_owned()),
        _ => Err(format!("no file `{p}`")),
    }
}

fn config() -> Arc<Config> {
    let exe = std::env::current_exe().unwrap().display().to_string();
    Arc::new(load(&config_toml(&exe), &files).unwrap_or_else(|e| panic!("{e}")))
}

/// The upstream, when this binary runs as the child: a minimal MCP server on stdio (one JSON-RPC
/// message per line) with a read tool `get_item` and a change tool `restock`. Its annotations
/// claim `restock` is read-only; Bridle must not care.
#[test]
#[ignore = "the upstream MCP server of the mcp_gateway tests (a child process)"]
fn upstream_child() {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return;
    }
    let tool = |name: &str, props: Value| {
        json!({"name": name, "annotations": {"readOnlyHint": true},
               "inputSchema": {"type": "object", "properties": props, "required": ["item"]}})
    };
    let mut out = std::io::stdout().lock();
    // Ends the harness's `test … ` line so the protocol starts on a line of its own.
    writeln!(out).unwrap();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = msg.get("id").cloned() else { continue };
        let result = match msg["method"].as_str().unwrap_or_default() {
            "initialize" => json!({"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                                   "serverInfo": {"name": "upstream", "version": "0"}}),
            "tools/list" => json!({"tools": [
                tool("get_item", json!({"item": {"type": "string"}})),
                tool("restock", json!({"item": {"type": "string"}, "qty": {"type": "integer"}})),
            ]}),
            "tools/call" => {
                let args = &msg["params"]["arguments"];
                let item = args["item"].as_str().unwrap_or_default();
                if item == "boom" {
                    json!({"isError": true, "content": [{"type": "text",
                           "text": "db down: password=hunter2 mail ops@example.com\nsecond line"}]})
                } else if msg["params"]["name"] == "restock" {
                    json!({"content": [], "structuredContent": {"item": item, "qty": args["qty"]}})
                } else {
                    json!({"content": [{"type": "text", "text": format!("{{\"item\":\"{item}\",\"qty\":5}}")}]})
                }
            }
            _ => json!({}),
        };
        writeln!(out, "{}", json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn mcp_tools_route_to_their_upstream_tool() {
    let c = config();
    assert_eq!(
        c.adapters.routes["lookup"],
        ToolRoute::Mcp { adapter: "upstream".into(), upstream_tool: "get_item".into() }
    );
    assert_eq!(
        c.adapters.routes["restock"],
        ToolRoute::Mcp { adapter: "upstream".into(), upstream_tool: "restock".into() }
    );
    let exe = std::env::current_exe().unwrap().display().to_string();
    let both = config_toml(&exe).replace("timeout_ms = 5000", "url = \"http://127.0.0.1:9/mcp\"");
    let err = load(&both, &files).unwrap_err().to_string();
    assert!(err.contains("exactly one of `command`"), "{err}");
}

#[tokio::test]
async fn gateway_calls_are_gated_and_upstream_errors_fail() {
    let c = config();
    let adapter = bridle_runtime::adapter::from_config(&c).unwrap();
    let clock = Arc::new(ManualClock::new(T0 + TimeDuration::seconds(10)));
    let gate = Gate::new(c.clone(), Stores::memory(), adapter, clock);
    let clerk = c.principals["clerk"].clone();
    let call = |tool: &str, args: Value| {
        let (gate, clerk) = (gate.clone(), clerk.clone());
        let tool = tool.to_owned();
        async move { gate.call(&clerk, &run(), &CallRequest::new(&tool, args)).await.unwrap() }
    };

    // A read passes through to the upstream's `get_item` (text content parsed as JSON).
    let read = call("lookup", json!({"item": "widget"})).await;
    match &read.verdict {
        Verdict::Ok { result } => assert!(result.to_string().contains("widget"), "{result}"),
        other => panic!("not ok: {other:?}"),
    }
    // The change needs approval although the upstream claims readOnlyHint.
    let change = call("restock", json!({"item": "widget", "qty": 9})).await;
    assert_eq!(rejection(&change).code, Code::ApprovalRequired);
    // isError → adapter_failed, one line, masked.
    let boom = rejection(&call("lookup", json!({"item": "boom"})).await);
    assert_eq!(boom.code, Code::AdapterFailed);
    assert!(boom.message.contains("db down"), "{}", boom.message);
    assert!(!boom.message.contains("ops@example.com") && !boom.message.contains('\n'), "{}", boom.message);
    // A contract whose properties the upstream does not have is refused.
    let drifted = rejection(&call("drifted", json!({"item": "widget"})).await);
    assert_eq!(drifted.code, Code::AdapterFailed);
    assert!(drifted.message.contains("does not match"), "{}", drifted.message);
}
