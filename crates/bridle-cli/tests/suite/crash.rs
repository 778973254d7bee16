//! Crash safety (issue 8 point 4): `bridle serve` is killed with SIGKILL at seeded random points
//! during a burst of approved changes from several clients, round after round on one store, and
//! started again on it. Its change tool goes through the HTTP adapter to a fake fab adapter in a
//! separate process (this test binary run again, `fake_fab_adapter` below), which keeps its own
//! append-only log of what it applied, so its view survives every kill.
//!
//! After each kill: `bridle audit verify` passes; every change the adapter applied has a
//! `job_dispatched` audit event (written before the side effect) and a job that is final or
//! `unknown`, or still `dispatched` when the kill cut its call; no approval was consumed by two
//! jobs and no idempotency key (job id) reached the adapter twice. Then `bridle jobs reconcile
//! --grace 0s` settles everything through the adapter's status endpoint: after it, every applied
//! change is `succeeded`, everything else `failed`, nothing is left unsettled, and the chain (with
//! its `job_settled` events) still verifies.
//!
//! The child is this test binary instead of an example or a helper binary: nothing extra ships,
//! cargo builds it with the tests, and no nested `cargo build` is needed while tests run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{PgSchema, Proc, copy_example, text};

const SECRET: &str = "crash-test-secret-of-at-least-32-bytes!!";
/// The change identity's credential; the fake adapter refuses any other.
const CHANGER: &str = "changer-secret-7";
const ROUNDS: usize = 24;
const PG_ROUNDS: usize = 20;
const CLIENTS: usize = 4;
/// Environment variable naming the fake adapter's log; set only for the child.
const LOG_VAR: &str = "BRIDLE_FAKE_FAB_LOG";

// ---------------------------------------------------------------------------------------------
// The fake fab adapter (child process)
// ---------------------------------------------------------------------------------------------

struct Fab {
    /// Job id (idempotency key) → the result answered.
    applied: Mutex<BTreeMap<String, Value>>,
    log: Mutex<std::fs::File>,
}

fn authorized(h: &axum::http::HeaderMap) -> bool {
    h.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {CHANGER}"))
}

async fn scale(
    axum::extract::State(fab): axum::extract::State<Arc<Fab>>,
    axum::extract::Path(service): axum::extract::Path<String>,
    h: axum::http::HeaderMap,
    body: String,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    if !authorized(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(key) = h.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let args: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    // A little work before the change and before the answer, so kills land on both sides.
    tokio::time::sleep(Duration::from_millis(3)).await;
    let result = {
        let mut applied = fab.applied.lock().unwrap();
        let mut log = fab.log.lock().unwrap();
        if let Some(done) = applied.get(&key) {
            // A real adapter deduplicates; the log still shows the second delivery.
            log.write_all(format!("{}\n", json!({"duplicate": key})).as_bytes()).unwrap();
            done.clone()
        } else {
            let result = json!({"service": service, "replicas": args["replicas"], "change": applied.len() + 1});
            // One write per line, so a reader never sees half a line from two writes.
            let line = json!({"job_id": key, "service": service, "replicas": args["replicas"]});
            log.write_all(format!("{line}\n").as_bytes()).unwrap();
            applied.insert(key, result.clone());
            result
        }
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    axum::Json(result).into_response()
}

async fn status(
    axum::extract::State(fab): axum::extract::State<Arc<Fab>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    h: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    if !authorized(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    match fab.applied.lock().unwrap().get(&id) {
        Some(result) => axum::Json(result.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[test]
#[ignore = "the crash test's fake fab adapter: runs only as its child process"]
fn fake_fab_adapter() {
    let Ok(path) = std::env::var(LOG_VAR) else { return };
    let log = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    let fab = Arc::new(Fab { applied: Mutex::new(BTreeMap::new()), log: Mutex::new(log) });
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async move {
        let app = axum::Router::new()
            .route("/scale/{service}", axum::routing::post(scale))
            .route("/jobs/{id}", axum::routing::get(status))
            .with_state(fab);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("FAB LISTENING {}", listener.local_addr().unwrap().port());
        std::io::stdout().flush().unwrap();
        axum::serve(listener, app).await.unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

/// Starts the fake adapter; returns it and its port.
fn start_fab(log: &Path) -> (Proc, u16) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "suite::crash::fake_fab_adapter", "--nocapture", "--test-threads=1"])
        .env(LOG_VAR, log)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("the fake adapter ended before listening").unwrap();
        // The harness prints `test … ... ` before the child's own line.
        if let Some((_, port)) = line.split_once("FAB LISTENING ") {
            break port.trim().parse().unwrap();
        }
    };
    // Keep draining the harness's output so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (Proc(child), port)
}

fn bridle_cmd(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridle"));
    cmd.current_dir(dir)
        .env("BRIDLE_JWT_SECRET", SECRET)
        .env("CHECKOUT_CHANGER_TOKEN", CHANGER)
        .env("CHECKOUT_READER_TOKEN", "reader-secret")
        .env_remove("BRIDLE_CONFIG")
        .env_remove("BRIDLE_STORE_URL")
        .env_remove("BRIDLE_LISTEN");
    cmd
}

/// `bridle serve` on `db`; returns it and its base URL.
fn serve(dir: &Path, db: &str) -> (Proc, String) {
    let mut child = bridle_cmd(dir)
        .args(["serve", "--config", "bridle.toml", "--db", db, "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let base =
        first.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{first}")).to_owned();
    (Proc(child), base)
}

/// Runs `bridle ARGS` with the test's environment; panics on failure.
fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = bridle_cmd(dir).args(args).output().unwrap();
    assert!(out.status.success(), "bridle {args:?}: {}{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

fn token(dir: &Path, subject: &str, scopes: &str) -> String {
    run_ok(
        dir,
        &["token", "issue", "--subject", subject, "--tenant", "tenant-a", "--services", "checkout", "--scopes", scopes],
    )
    .trim()
    .to_owned()
}

/// The checkout example with `scale_replicas` sent to the fake adapter over HTTP.
fn write_config(dir: &Path, fab_port: u16) {
    let toml = copy_example(dir);
    let routed = toml.replacen(
        "schema = \"schemas/scale_replicas.json\"",
        "schema = \"schemas/scale_replicas.json\"\nadapter = \"http:fab\"\n\
         request = { method = \"POST\", path = \"/scale/{service}\" }",
        1,
    );
    assert_ne!(routed, toml, "the example's scale_replicas moved");
    let extra = format!(
        "\n[adapters.http.fab]\nbase_url = \"http://127.0.0.1:{fab_port}\"\ntimeout_ms = 2000\n\
         status_path = \"/jobs/{{job_id}}\"\n\n[server]\nrate_per_second = 1000000.0\nburst = 1000000\n"
    );
    std::fs::write(dir.join("bridle.toml"), format!("{routed}{extra}")).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Clients
// ---------------------------------------------------------------------------------------------

/// splitmix64: the kill points come from a fixed seed.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

async fn post(client: &reqwest::Client, url: &str, token: &str, body: &Value) -> Option<(u16, Value)> {
    let response = client
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.ok()?;
    Some((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

async fn wait_healthy(client: &reqwest::Client, base: &str) {
    for _ in 0..400 {
        if client.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{base} never became healthy");
}

struct Tokens {
    requester: String,
    operator: String,
}

/// One client: request, approve (as the operator, over the API), execute with the approval and
/// an idempotency key — until the server dies. Returns the changes it saw executed.
async fn client_loop(client: reqwest::Client, base: String, tokens: Arc<Tokens>, round: usize, me: usize) -> usize {
    let mut executed = 0;
    for n in 0.. {
        let call = json!({
            "tool": "scale_replicas",
            "arguments": {"service": "checkout", "replicas": 3 + n % 2, "resource_version": 7},
            "run_id": format!("crash-{round}-{me}-{n}"),
            "incident": "inc-crash",
        });
        let Some((status, asked)) = post(&client, &format!("{base}/v1/calls"), &tokens.requester, &call).await else {
            break;
        };
        assert_eq!((status, asked["rejection"]["code"].as_str()), (200, Some("approval_required")), "{asked}");
        let id = asked["approval_id"].as_str().unwrap().to_owned();
        let url = format!("{base}/v1/approvals/{id}/approve");
        let Some((status, granted)) = post(&client, &url, &tokens.operator, &json!({})).await else { break };
        assert_eq!(status, 200, "{granted}");
        let mut approved = call.clone();
        approved["approval_id"] = json!(id);
        approved["idempotency_key"] = json!(format!("key-{round}-{me}-{n}"));
        let Some((status, done)) = post(&client, &format!("{base}/v1/calls"), &tokens.requester, &approved).await
        else {
            break;
        };
        assert_eq!((status, done["status"].as_str()), (200, Some("ok")), "{done}");
        executed += 1;
    }
    executed
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// (job id, status, approval id) of every job in the store.
async fn jobs_table(db: &str) -> Vec<(String, String, Option<String>)> {
    const SQL: &str = "SELECT id, status, approval_id FROM jobs ORDER BY id";
    if db.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(db).await.unwrap();
        let rows = sqlx::query_as(SQL).fetch_all(&pool).await.unwrap();
        pool.close().await;
        rows
    } else {
        let pool = sqlx::PgPool::connect(db).await.unwrap();
        let rows = sqlx::query_as(SQL).fetch_all(&pool).await.unwrap();
        pool.close().await;
        rows
    }
}

/// The adapter's log: applied job ids in order, and any second delivery of a key.
fn fab_log(path: &Path) -> (Vec<String>, Vec<String>) {
    let mut applied = Vec::new();
    let mut duplicates = Vec::new();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // A line still being written (no newline yet) is read next time.
    for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
        let v: Value = serde_json::from_str(line.trim_end()).unwrap();
        match (v["job_id"].as_str(), v["duplicate"].as_str()) {
            (Some(id), _) => applied.push(id.to_owned()),
            (_, Some(id)) => duplicates.push(id.to_owned()),
            _ => panic!("bad log line {line}"),
        }
    }
    (applied, duplicates)
}

/// Call ids of the store's events of `kind`.
fn events_of(dir: &Path, db: &str, kind: &str) -> BTreeSet<String> {
    run_ok(dir, &["audit", "export", "--config", "bridle.toml", "--db", db])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == kind)
        .map(|e| e["call_id"].as_str().unwrap().to_owned())
        .collect()
}

/// What one round measured.
#[derive(Debug, Default)]
struct Round {
    /// (changes applied in the round before the kill, then milliseconds).
    kill_after: (u64, u64),
    executed: usize,
    applied: usize,
    dispatched: usize,
    reserved: usize,
    unknown: usize,
    reconciled_succeeded: usize,
    reconciled_failed: usize,
}

async fn crash_rounds(db: &str, rounds: usize, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let fab_log_path: PathBuf = dir.path().join("fab-applied.log");
    let (_fab, fab_port) = start_fab(&fab_log_path);
    write_config(dir.path(), fab_port);
    let tokens = Arc::new(Tokens {
        requester: token(dir.path(), "requester-1", "service:read,service:scale"),
        operator: token(dir.path(), "operator-2", "approval:grant"),
    });
    bridle_runtime::llm::openai::install_tls_provider();
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let mut rng = Rng(seed);
    let mut seen_applied = 0;
    let mut report = Vec::new();
    let started = Instant::now();
    for round in 0..rounds {
        // The kill point: after 1–8 more changes reached the adapter, then 0–39 ms more, so
        // kills land before, inside and after adapter calls.
        let (wait_changes, delay_ms) = (1 + rng.next_u64() % 8, rng.next_u64() % 40);
        let mut r = Round { kill_after: (wait_changes, delay_ms), ..Round::default() };
        let (mut server, base) = serve(dir.path(), db);
        wait_healthy(&client, &base).await;
        let clients: Vec<_> = (0..CLIENTS)
            .map(|me| tokio::spawn(client_loop(client.clone(), base.clone(), tokens.clone(), round, me)))
            .collect();
        let target = seen_applied + usize::try_from(wait_changes).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while fab_log(&fab_log_path).0.len() < target {
            assert!(Instant::now() < deadline, "round {round}: the burst stalled");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        server.0.kill().unwrap(); // SIGKILL
        server.0.wait().unwrap();
        for c in clients {
            r.executed += c.await.unwrap();
        }

        // The store as the kill left it.
        run_ok(dir.path(), &["audit", "verify", "--config", "bridle.toml", "--db", db]);
        let (applied, duplicates) = fab_log(&fab_log_path);
        assert!(duplicates.is_empty(), "round {round}: keys delivered twice: {duplicates:?}");
        let unique: BTreeSet<&String> = applied.iter().collect();
        assert_eq!(unique.len(), applied.len(), "round {round}: a change applied twice");
        let jobs = jobs_table(db).await;
        let approvals: Vec<&String> = jobs.iter().filter_map(|j| j.2.as_ref()).collect();
        let distinct: BTreeSet<&&String> = approvals.iter().collect();
        assert_eq!(distinct.len(), approvals.len(), "round {round}: an approval consumed by two jobs");
        assert_eq!(approvals.len(), jobs.len(), "every change job consumed an approval");
        let status: BTreeMap<&str, &str> = jobs.iter().map(|j| (j.0.as_str(), j.1.as_str())).collect();
        let dispatched_events = events_of(dir.path(), db, "job_dispatched");
        for id in &applied {
            let s = status.get(id.as_str()).copied();
            assert!(
                matches!(s, Some("succeeded" | "unknown" | "dispatched")),
                "round {round}: applied change {id} has job state {s:?}"
            );
            assert!(dispatched_events.contains(id), "round {round}: applied change {id} has no audit event");
        }
        r.applied = applied.len() - seen_applied;
        seen_applied = applied.len();
        let count = |s: &str| jobs.iter().filter(|j| j.1 == s).count();
        (r.dispatched, r.reserved, r.unknown) = (count("dispatched"), count("reserved"), count("unknown"));

        // Reconcile: no server runs on the store now, so every in-flight job is abandoned.
        let out = run_ok(
            dir.path(),
            &["jobs", "reconcile", "--config", "bridle.toml", "--db", db, "--grace", "0s", "--json"],
        );
        let settled: Value = serde_json::from_str(out.trim()).unwrap();
        let applied_set: BTreeSet<&str> = applied.iter().map(String::as_str).collect();
        for j in settled["jobs"].as_array().unwrap() {
            let expected = if applied_set.contains(j["job_id"].as_str().unwrap()) { "succeeded" } else { "failed" };
            assert_eq!(j["to"], expected, "round {round}: {j}");
        }
        r.reconciled_succeeded = settled["summary"]["succeeded"].as_u64().unwrap() as usize;
        r.reconciled_failed = settled["summary"]["failed"].as_u64().unwrap() as usize;
        assert_eq!(settled["summary"]["unknown"], 0, "round {round}: the adapter knows every job: {settled}");
        let left = run_ok(dir.path(), &["jobs", "list", "--config", "bridle.toml", "--db", db, "--json"]);
        assert!(left.trim().is_empty(), "round {round}: unsettled after reconcile: {left}");
        for (id, s, _) in jobs_table(db).await {
            let expected = if applied_set.contains(id.as_str()) { "succeeded" } else { "failed" };
            assert_eq!(s, expected, "round {round}: job {id}");
        }
        run_ok(dir.path(), &["audit", "verify", "--config", "bridle.toml", "--db", db]);
        let settled_events = events_of(dir.path(), db, "job_settled");
        for j in settled["jobs"].as_array().unwrap() {
            assert!(settled_events.contains(j["job_id"].as_str().unwrap()), "round {round}: {j} not audited");
        }
        println!(
            "round {round:>2}: kill {} changes + {:>2} ms in, {:>2} answered ok, {:>2} applied by the adapter; \
             at the kill {} dispatched / {} reserved / {} unknown; reconciled {} succeeded + {} failed",
            r.kill_after.0,
            r.kill_after.1,
            r.executed,
            r.applied,
            r.dispatched,
            r.reserved,
            r.unknown,
            r.reconciled_succeeded,
            r.reconciled_failed
        );
        report.push(r);
    }
    let sum = |f: fn(&Round) -> usize| report.iter().map(f).sum::<usize>();
    println!(
        "{rounds} rounds in {:.1} s: {} changes applied, {} in flight at a kill (dispatched), {} reserved, \
         {} unknown; reconciled {} succeeded + {} failed",
        started.elapsed().as_secs_f64(),
        sum(|r| r.applied),
        sum(|r| r.dispatched),
        sum(|r| r.reserved),
        sum(|r| r.unknown),
        sum(|r| r.reconciled_succeeded),
        sum(|r| r.reconciled_failed)
    );
    assert!(sum(|r| r.applied) >= rounds, "the bursts applied too few changes to mean anything");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_servers_on_sqlite_lose_no_change_and_reconcile_every_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    crash_rounds(&db, ROUNDS, 0x00B1_D1E5_EED0_0004).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_servers_on_postgres_lose_no_change_and_reconcile_every_unknown_one() {
    let Some(schema) = PgSchema::fresh("crash").await else { return };
    crash_rounds(&schema.url, PG_ROUNDS, 0x00B1_D1E5_EED0_0008).await;
    schema.drop().await;
}

#[test]
fn jobs_list_and_reconcile_on_a_fresh_store_say_there_is_nothing_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let list = run_ok(dir.path(), &["jobs", "list", "--db", &db]);
    assert_eq!(list.trim(), "no unsettled jobs");
    let reconcile = run_ok(dir.path(), &["jobs", "reconcile", "--db", &db]);
    assert_eq!(reconcile.trim(), "0 job(s) examined: 0 succeeded, 0 failed, 0 still unknown");
    let out = bridle_cmd(dir.path()).args(["jobs", "reconcile", "--db", &db, "--grace", "2d"]).output().unwrap();
    assert!(!out.status.success() && text(&out.stderr).contains("the unit must be s, m or h"), "{}", text(&out.stderr));
}
