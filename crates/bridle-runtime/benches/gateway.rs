//! The latency the MCP gateway adds (issue 7, point 11; target ≤ 0.5 ms at p50): one in-process
//! rmcp upstream over Streamable HTTP on 127.0.0.1 (`tests/suite/mcp_upstream.rs`), called
//! directly with an rmcp client and through Bridle (`Gate::call` → `adapter/mcp.rs` → the same
//! upstream), one call at a time, the two alternating so that noise falls on both alike.
//!
//! ```sh
//! cargo bench -p bridle-runtime --bench gateway                          # 5000 samples of each
//! cargo bench -p bridle-runtime --bench gateway -- --samples 20000 --json
//! ```
//!
//! Both paths send the same bearer credential and read the same tool (`get_item`); the gateway's
//! tool is a `read` with `untrusted_output = true` (what an imported upstream tool usually is),
//! so its call also runs the contract, Cedar, the plan hash, output masking and spotlighting, the
//! run's taint flag and one audit append (in-memory store).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "../tests/suite/mcp_upstream.rs"]
#[allow(dead_code)]
mod mcp_upstream;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bridle_core::RunContext;
use bridle_core::config::load;
use bridle_runtime::Verdict;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::CallRequest;
use bridle_runtime::store::Stores;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

const CREDENTIAL: &str = "bench-upstream-credential";
const WARM_UP: usize = 300;

const SCHEMA: &str = r#"
namespace Bridle {
  entity Principal = { tenant: String, services: Set<String>, scopes: Set<String> };
  entity Resource = { tenant: String, kind: String, name: String };
  action lookup appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String, arguments: { item: String } } };
}
"#;

const POLICY: &str = r#"
@id("items-held")
permit (principal, action, resource)
when { resource.tenant == principal.tenant && principal.scopes.contains(context.scope)
       && principal.services.contains(resource.name) };
"#;

fn config_toml(url: &str, credential_file: &str) -> String {
    format!(
        r#"
[policy]
schema = "t.cedarschema"
files = ["t.cedar"]

[executors.up-reader]
mode = "read"

[adapters.mcp.upstream]
url = "{url}"
credential_file = "{credential_file}"
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

[principals.clerk]
tenant = "shop-1"
services = ["widget"]
scopes = ["shop:read"]
"#
    )
}

struct Stats {
    n: usize,
    p50: Duration,
    p90: Duration,
    p99: Duration,
    max: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let n = samples.len();
    let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    let total: Duration = samples.iter().sum();
    Stats { n, p50: at(0.50), p90: at(0.90), p99: at(0.99), max: samples[n - 1], mean: total / n as u32 }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let mut samples = 5000_usize;
    let mut as_json = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--samples" => samples = args.next().and_then(|n| n.parse().ok()).expect("--samples N"),
            "--json" => as_json = true,
            _ => {} // `cargo bench` passes `--bench`.
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(run(samples.max(1), as_json));
}

async fn run(samples: usize, as_json: bool) {
    // rmcp's reqwest client (the direct path's) needs the build's rustls provider.
    bridle_runtime::llm::openai::install_tls_provider();
    let upstream = mcp_upstream::start().await.unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    let secret = dir.path().join("upstream.token");
    std::fs::write(&secret, CREDENTIAL).unwrap();

    // Direct: an rmcp client of its own, one session, kept open.
    let direct = ()
        .serve(StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(upstream.url.as_str()).auth_header(CREDENTIAL),
        ))
        .await
        .unwrap();
    let peer = direct.peer().clone();
    let params = || {
        let mut p = CallToolRequestParams::new("get_item");
        p.arguments = json!({"item": "widget"}).as_object().cloned();
        p
    };

    // Through Bridle: the gate over the MCP adapter, in-memory stores.
    let files = |p: &str| match p {
        "t.cedarschema" => Ok(SCHEMA.to_owned()),
        "t.cedar" => Ok(POLICY.to_owned()),
        _ => Err(format!("no file `{p}`")),
    };
    let config = Arc::new(load(&config_toml(&upstream.url, &secret.display().to_string()), &files).unwrap());
    let adapter =
        bridle_runtime::adapter::from_config(&config, std::sync::Arc::new(bridle_runtime::adapter::NoTools)).unwrap();
    let gate = Engine::builder(config.clone(), Stores::memory(), adapter).gate().unwrap();
    let clerk = config.principals["clerk"].clone();
    let run = RunContext::new("bench-run", "");
    let request = CallRequest::new("lookup", json!({"item": "widget"}));

    let mut direct_times = Vec::with_capacity(samples);
    let mut gateway_times = Vec::with_capacity(samples);
    for i in 0..WARM_UP + samples {
        let started = Instant::now();
        let answer = peer.call_tool(params()).await.unwrap();
        let direct_took = started.elapsed();
        assert_ne!(answer.is_error, Some(true));

        let started = Instant::now();
        let outcome = gate.call(&clerk, &run, &request).await.unwrap();
        let gateway_took = started.elapsed();
        assert!(matches!(outcome.verdict, Verdict::Ok { .. }), "{:?}", outcome.verdict);

        if i >= WARM_UP {
            direct_times.push(direct_took);
            gateway_times.push(gateway_took);
        }
    }
    assert_eq!(upstream.reads(), 2 * (WARM_UP + samples), "every call reached the upstream once");
    let (d, g) = (stats(direct_times), stats(gateway_times));
    let added_p50 = us(g.p50) - us(d.p50);
    let added_p99 = us(g.p99) - us(d.p99);
    if as_json {
        let row = |s: &Stats| {
            json!({"n": s.n, "p50_us": us(s.p50), "p90_us": us(s.p90), "p99_us": us(s.p99),
                   "max_us": us(s.max), "mean_us": us(s.mean)})
        };
        let report = json!({
            "direct": row(&d), "gateway": row(&g),
            "added_p50_us": added_p50, "added_p99_us": added_p99, "target_added_p50_us": 500.0,
        });
        println!("{report}");
    } else {
        println!("{:<10} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}", "path", "n", "p50", "p90", "p99", "max", "mean");
        for (name, s) in [("direct", &d), ("gateway", &g)] {
            println!(
                "{name:<10} {:>7} {:>8.1}µs {:>8.1}µs {:>8.1}µs {:>8.1}µs {:>8.1}µs",
                s.n,
                us(s.p50),
                us(s.p90),
                us(s.p99),
                us(s.max),
                us(s.mean)
            );
        }
        println!("added by the gateway: p50 {added_p50:.1} µs, p99 {added_p99:.1} µs (target p50 ≤ 500 µs)");
    }
    direct.cancel().await.unwrap();
}
