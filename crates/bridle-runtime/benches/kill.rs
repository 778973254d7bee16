//! The kill switch's per-call cost: the store read gate step 2 makes on every call
//! (`KillSwitches::kill_covering`), on memory, an SQLite file and PostgreSQL (when
//! `BRIDLE_TEST_POSTGRES_URL` is set), with no switch on and with three switches that do not
//! cover the call (the usual state during an incident elsewhere); and a whole read call through
//! the gate with the per-call read (`cache_ms = 0`) and with a bounded cache (`cache_ms = 1000`).
//!
//! `cargo bench -p bridle-runtime --bench kill`; BENCHMARKS.md holds the figures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use bridle_core::RunContext;
use bridle_core::kill::{KillScope, KillSwitch};
use bridle_runtime::adapter::MemoryAdapter;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::CallRequest;
use bridle_runtime::store::Stores;
use criterion::Criterion;
use serde_json::json;
use tokio::runtime::Runtime;

async fn with_switches(stores: &Stores) {
    for (i, scope) in [KillScope::tenant("tenant-z"), KillScope::agent("other-agent"), KillScope::tenant("tenant-y")]
        .into_iter()
        .enumerate()
    {
        let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(i64::try_from(i).unwrap());
        let switch = KillSwitch { scope, reason: "drill".into(), set_by: "bench".into(), set_at: at };
        stores.kills.set_kill(&switch, Vec::new()).await.unwrap();
    }
}

/// `iters` sequential awaits of `f()` on `rt`, timed inside the runtime.
fn timed<F, Fut, T, E>(rt: &Runtime, iters: u64, f: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    rt.block_on(async {
        let start = std::time::Instant::now();
        for _ in 0..iters {
            black_box(f().await.unwrap());
        }
        start.elapsed()
    })
}

fn reads(c: &mut Criterion, rt: &Runtime, name: &str, stores: &Stores) {
    let mut group = c.benchmark_group("kill");
    group.sample_size(50).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    group.bench_function(format!("covering/{name}/none"), |b| {
        b.iter_custom(|iters| timed(rt, iters, || stores.kills.kill_covering("tenant-a", Some("advisor"))));
    });
    rt.block_on(with_switches(stores));
    group.bench_function(format!("covering/{name}/three_other"), |b| {
        b.iter_custom(|iters| timed(rt, iters, || stores.kills.kill_covering("tenant-a", Some("advisor"))));
    });
    group.finish();
}

fn gate_calls(c: &mut Criterion, rt: &Runtime, dir: &tempfile::TempDir) {
    let mut group = c.benchmark_group("kill");
    group.sample_size(30).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    for cache_ms in [0, 1000] {
        let text = format!("{}\n[kill_switch]\ncache_ms = {cache_ms}\n", bridle_runtime::bundled::CHECKOUT_TOML);
        let config = bridle_core::config::load(&text, &|p: &str| {
            bridle_runtime::bundled::checkout_file(p).ok_or_else(|| format!("no `{p}`"))
        })
        .unwrap();
        let config = Arc::new(config);
        let url = format!("sqlite://{}", dir.path().join(format!("gate-{cache_ms}.db")).display());
        let stores = rt.block_on(Stores::open(&url)).unwrap();
        rt.block_on(with_switches(&stores));
        let adapter = Arc::new(MemoryAdapter::from_config(&config));
        let gate = Engine::builder(config.clone(), stores, adapter).gate().unwrap();
        let requester = config.principals["requester-1"].clone();
        let run = RunContext::new("run-101", "inc-42");
        let call = CallRequest::new("get_service_snapshot", json!({"service": "checkout"}));
        group.bench_function(format!("gate_read/sqlite/cache_ms_{cache_ms}"), |b| {
            b.iter_custom(|iters| timed(rt, iters, || gate.call(&requester, &run, &call)));
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    reads(&mut c, &rt, "memory", &Stores::memory());
    let url = format!("sqlite://{}", dir.path().join("kill.db").display());
    let sqlite = rt.block_on(Stores::open(&url)).unwrap();
    reads(&mut c, &rt, "sqlite", &sqlite);
    if let Ok(pg) = std::env::var("BRIDLE_TEST_POSTGRES_URL") {
        let stores = rt.block_on(Stores::open(&pg)).unwrap();
        rt.block_on(async {
            for s in stores.kills.active_kills().await.unwrap() {
                stores.kills.lift_kill(&s.scope, Vec::new()).await.unwrap();
            }
        });
        reads(&mut c, &rt, "postgres", &stores);
        rt.block_on(async {
            for s in stores.kills.active_kills().await.unwrap() {
                stores.kills.lift_kill(&s.scope, Vec::new()).await.unwrap();
            }
        });
    }
    gate_calls(&mut c, &rt, &dir);
    c.final_summary();
}
