//! Running the `bridle` binary from tests, and a writable copy of the checkout example.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// A child process, killed (SIGKILL) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `bridle ARGS` in `cwd` with no configuration or store taken from the environment.
pub fn bridle(args: &[&str], cwd: &Path) -> Output {
    bridle_with_stdin(args, cwd, b"")
}

/// [`bridle`] with `stdin` piped in.
pub fn bridle_with_stdin(args: &[&str], cwd: &Path, stdin: &[u8]) -> Output {
    bridle_env(args, cwd, stdin, &[])
}

/// Settings a test run never inherits from the environment it was started in.
const INHERITED: [&str; 12] = [
    "BRIDLE_CONFIG",
    "BRIDLE_STORE_URL",
    "BRIDLE_TOKEN",
    "BRIDLE_AUDIT_SIGNING_KEY",
    "BRIDLE_AUDIT_SIGNING_KEY_FILE",
    "BRIDLE_AUDIT_HEADS",
    "BRIDLE_JWT_PUBLIC_KEY",
    "BRIDLE_JWT_JWKS",
    "BRIDLE_JWT_JWKS_URL",
    "BRIDLE_JWT_OIDC_ISSUER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
];

/// [`bridle_with_stdin`] with these environment variables set.
pub fn bridle_env(args: &[&str], cwd: &Path, stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bridle"));
    command.args(args).current_dir(cwd);
    for var in INHERITED {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Copies the checkout example's schemas and policies into `dir`; returns its `bridle.toml` text
/// for the test to edit and write.
pub fn copy_example(dir: &Path) -> String {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/checkout");
    for sub in ["schemas", "policies"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for f in std::fs::read_dir(example.join(sub)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.join(sub).join(f.file_name())).unwrap();
        }
    }
    std::fs::read_to_string(example.join("bridle.toml")).unwrap()
}

/// The PostgreSQL URL for the PostgreSQL tests (`BRIDLE_TEST_POSTGRES_URL`). `None` (after
/// printing why) means skip; under `CI=true` a missing URL fails the test instead, so a green CI
/// always ran them.
pub fn postgres_url() -> Option<String> {
    match std::env::var("BRIDLE_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "BRIDLE_TEST_POSTGRES_URL is unset but CI=true: the PostgreSQL tests must run in CI"
            );
            eprintln!("skipped: BRIDLE_TEST_POSTGRES_URL is unset, so the PostgreSQL tests do not run");
            None
        }
    }
}

/// A PostgreSQL schema of a test's own: the tests start from an empty database and leave nothing
/// behind (`drop`). `None` (after printing why) when the PostgreSQL tests do not run.
pub struct PgSchema {
    admin: sqlx::PgPool,
    name: String,
    /// The URL of the database with this schema first on the search path.
    pub url: String,
}

impl PgSchema {
    /// A fresh schema named `bridle_{prefix}_{uuid}`.
    pub async fn fresh(prefix: &str) -> Option<PgSchema> {
        let base = postgres_url()?;
        let admin = sqlx::PgPool::connect(&base).await.expect("PostgreSQL must be reachable");
        let name = format!("bridle_{prefix}_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE SCHEMA {name}")).execute(&admin).await.unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options[search_path]={name}");
        Some(PgSchema { admin, name, url })
    }

    /// Drops the schema and everything in it.
    pub async fn drop(self) {
        sqlx::query(&format!("DROP SCHEMA {} CASCADE", self.name)).execute(&self.admin).await.unwrap();
    }
}
