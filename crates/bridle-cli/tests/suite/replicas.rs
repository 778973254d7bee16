//! Two `bridle serve` processes on one PostgreSQL database (issue 8 point 3): in every round a
//! requester's change is approved once, then 64 clients race to use that approval through both
//! replicas at once — exactly one of them executes, the other 63 are told `approval_replayed`.
//! Repeated for 200 rounds; at the end the jobs table holds one job per round and the audit
//! chain verifies.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::support::{PgSchema, Proc, bridle, copy_example, text};

const SECRET: &str = "replica-race-secret-of-at-least-32-bytes!!";
const ROUNDS: usize = 200;
const CLIENTS: usize = 64;

/// A `bridle serve` child, killed when dropped.
struct Server {
    _child: Proc,
    base: String,
}

fn serve(dir: &Path, db: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bridle"))
        .args(["serve", "--config", "bridle.toml", "--db", db, "--listen", "127.0.0.1:0"])
        .current_dir(dir)
        .env("BRIDLE_JWT_SECRET", SECRET)
        // 12,800 calls: only warnings and errors reach the test's output
        .env("RUST_LOG", "warn")
        .env_remove("BRIDLE_STORE_URL")
        .env_remove("BRIDLE_LISTEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // "bridle serving on http://127.0.0.1:PORT (store …)"
    let base =
        first.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{first}")).to_owned();
    Server { _child: Proc(child), base }
}

fn token(dir: &Path, subject: &str, scopes: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bridle"))
        .args(["token", "issue", "--subject", subject, "--tenant", "tenant-a", "--services", "checkout"])
        .args(["--scopes", scopes, "--ttl", "1h"])
        .current_dir(dir)
        .env("BRIDLE_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

async fn post(client: &reqwest::Client, url: &str, token: &str, body: &Value) -> (u16, Value) {
    let response = client
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn wait_healthy(client: &reqwest::Client, base: &str) {
    for _ in 0..200 {
        if client.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{base} never became healthy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_on_postgres_execute_an_approved_change_exactly_once_per_round() {
    // A schema of its own, so the run starts from an empty database and leaves nothing behind.
    let Some(schema) = PgSchema::fresh("replicas").await else { return };
    let db = schema.url.clone();

    let dir = tempfile::tempdir().unwrap();
    let toml = copy_example(dir.path());
    // Each replica keeps its own in-memory adapter, so the plan carries no resource_version
    // (that compare-and-set belongs to one system's state); raise the per-principal rate limit,
    // since all 64 clients are the same requester racing for the same plan.
    std::fs::write(
        dir.path().join("schemas/scale_replicas.json"),
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"service": {"type": "string", "minLength": 1}, "replicas": {"type": "integer"}},
            "required": ["service", "replicas"],
            "additionalProperties": false
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bridle.toml"),
        format!("{toml}\n[server]\nrate_per_second = 1000000.0\nburst = 1000000\n"),
    )
    .unwrap();

    let (a, b) = (serve(dir.path(), &db), serve(dir.path(), &db));
    bridle_runtime::llm::openai::install_tls_provider();
    let client = reqwest::Client::new();
    wait_healthy(&client, &a.base).await;
    wait_healthy(&client, &b.base).await;
    let requester = token(dir.path(), "requester-1", "service:read,service:scale");
    let operator = token(dir.path(), "operator-2", "approval:grant");

    for round in 0..ROUNDS {
        let call = json!({
            "tool": "scale_replicas",
            "arguments": {"service": "checkout", "replicas": 3},
            "run_id": format!("race-{round}"),
            "incident": "inc-race",
        });
        let (status, asked) = post(&client, &format!("{}/v1/calls", a.base), &requester, &call).await;
        assert_eq!((status, asked["rejection"]["code"].as_str()), (200, Some("approval_required")), "{asked}");
        let id = asked["approval_id"].as_str().unwrap().to_owned();
        let (status, granted) =
            post(&client, &format!("{}/v1/approvals/{id}/approve", b.base), &operator, &json!({})).await;
        assert_eq!(status, 200, "{granted}");

        let mut racing = call.clone();
        racing["approval_id"] = json!(id);
        let mut tasks = Vec::new();
        for i in 0..CLIENTS {
            let base = if i % 2 == 0 { a.base.clone() } else { b.base.clone() };
            let (client, requester, body) = (client.clone(), requester.clone(), racing.clone());
            tasks
                .push(tokio::spawn(async move { post(&client, &format!("{base}/v1/calls"), &requester, &body).await }));
        }
        let mut executed = 0;
        for task in tasks {
            let (status, outcome) = task.await.unwrap();
            assert_eq!(status, 200, "{outcome}");
            match outcome["status"].as_str() {
                Some("ok") => executed += 1,
                _ => assert_eq!(outcome["rejection"]["code"], "approval_replayed", "round {round}: {outcome}"),
            }
        }
        assert_eq!(executed, 1, "round {round}: {executed} executions of one approval");
    }

    let pool = sqlx::PgPool::connect(&db).await.unwrap();
    let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs").fetch_one(&pool).await.unwrap();
    assert_eq!(usize::try_from(jobs).unwrap(), ROUNDS, "one job per round");
    drop((a, b));
    let verify = bridle(&["audit", "verify", "--db", &db], dir.path());
    assert!(verify.status.success(), "{}{}", text(&verify.stdout), text(&verify.stderr));
    pool.close().await;
    schema.drop().await;
}
