//! `bridle mcp --stdio`: serves MCP on stdin/stdout as the principal of `--token` /
//! `BRIDLE_TOKEN`, verified as `bridle serve` verifies tokens. Stdout carries protocol messages
//! only; everything else goes to stderr. Argument handling only; the server is
//! `bridle_server::mcp`'s.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use bridle_runtime::runtime::RuntimeBuilder;
use bridle_server::auth::{AuthConfig, Verifier};
use bridle_server::mcp::{McpSettings, serve_stdio};
use bridle_server::serve::DEFAULT_LISTEN;

/// Serves until the client closes stdin.
pub async fn stdio(config: Option<&Path>, db: Option<&str>, token: Option<&str>) -> anyhow::Result<ExitCode> {
    let env_token = std::env::var("BRIDLE_TOKEN").ok().filter(|t| !t.trim().is_empty());
    let Some(token) = token.map(str::to_owned).or(env_token) else {
        bail!("`bridle mcp --stdio` needs a token: `--token T` or BRIDLE_TOKEN (see `bridle token issue`)");
    };
    // Logs (this command's and rmcp's) go to stderr: stdout is the protocol channel.
    super::observability::init_logging(false);
    let config = Arc::new(super::config(config)?);
    let auth = AuthConfig::from_env().context("cannot verify tokens")?.with_settings(&config.auth);
    let verifier = Verifier::new(&auth)?;
    verifier.refresh().await.context("cannot read the token keys")?;
    let principal = verifier.verify(token.trim()).context("the token was refused")?;
    let mut builder = RuntimeBuilder::new(config).tools(super::tools());
    if let Some(db) = db {
        builder = builder.store_url(db);
    }
    let runtime = builder.build().await.context("building the runtime")?;
    // Its chains' heads are signed once more before the process exits, even if the runtime is
    // still shared then.
    super::track(&runtime.stores);
    // The runtime's gate scans `scan = true` arguments as `bridle serve`'s does (gate step 4).
    let gate = runtime.engine.gate.clone();
    let console = super::console_url(&runtime.config, DEFAULT_LISTEN);
    eprintln!(
        "bridle mcp: serving MCP on stdio as `{}` of tenant `{}` (store `{}`)",
        principal.subject, principal.tenant, runtime.stores.url
    );
    let served = serve_stdio(gate, principal, &console).await;
    runtime.shutdown().await;
    served?;
    Ok(ExitCode::SUCCESS)
}

/// `/mcp` settings of a server listening on `local`: approval links point at `console` (see
/// [`super::console_url`]), and its own address is accepted as `Host` beside the loopback names
/// (any host when it listens on every interface; the bearer token still guards every request).
pub fn settings_for(settings: &mut McpSettings, local: SocketAddr, console: String) {
    settings.console = console;
    if local.ip().is_unspecified() {
        settings.allowed_hosts.clear();
    } else {
        settings.allowed_hosts.push(local.ip().to_string());
    }
}
