//! `bridle serve`: builds the runtime from the configuration, serves the HTTP API until Ctrl-C
//! or SIGTERM (pipeline runs at `/v1/runs` over the same runtime), then shuts the runtime down.
//! Argument handling and printing only.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bridle_runtime::drift::{DriftHook, SnapshotHook, WebhookHook, watch};
use bridle_runtime::feedback::hooks as feedback_hooks;
use bridle_runtime::runs::Runs;
use bridle_runtime::runtime::RuntimeBuilder;
use bridle_server::auth::{AuthConfig, KeySource};
use bridle_server::limits::Limits;
use bridle_server::serve::{DEFAULT_LISTEN, serve, shutdown_signal};
use bridle_server::{AppState, router};

use super::out;

/// Starts the `[drift]` watch when it has an interval, with its snapshot and webhook hooks.
fn drift_watch(
    runtime: &bridle_runtime::runtime::Runtime,
    secret: Option<String>,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let settings = runtime.config.drift.clone();
    if settings.interval.is_none() {
        return Ok(None);
    }
    let mut hooks: Vec<Arc<dyn DriftHook>> = Vec::new();
    if let Some(dir) = &settings.snapshot_dir {
        hooks.push(Arc::new(SnapshotHook { dir: dir.into() }));
    }
    if let Some(url) = &settings.webhook {
        let secret = secret.with_context(|| {
            format!("`[drift] webhook` needs the secret in `{}`", runtime.config.webhooks.secret_env)
        })?;
        hooks.push(Arc::new(WebhookHook {
            url: url.clone(),
            secret: secret.into_bytes(),
            timeout: runtime.config.webhooks.timeout,
        }));
    }
    out::line(&format!(
        "  drift: scanning {} every {} s",
        settings.tenants.join(", "),
        settings.interval.map_or(0, |i| i.as_secs())
    ))?;
    Ok(watch::spawn(runtime.stores.decisions.clone(), settings, hooks))
}

/// Serves on `listen` (else `BRIDLE_LISTEN`, else `[server] listen`, else 127.0.0.1:8080).
pub async fn run(
    config: Option<&Path>,
    db: Option<&str>,
    listen: Option<&str>,
    log_json: bool,
) -> anyhow::Result<ExitCode> {
    let config = Arc::new(super::config(config)?);
    let auth = AuthConfig::from_env().context("cannot verify tokens")?.with_settings(&config.auth);
    let telemetry = super::observability::init_telemetry(log_json, config.server.otlp_endpoint.as_deref())?;
    let env_listen = std::env::var("BRIDLE_LISTEN").ok().filter(|v| !v.is_empty());
    let addr = listen
        .map(str::to_owned)
        .or(env_listen)
        .or(config.server.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await.with_context(|| format!("cannot listen on `{addr}`"))?;
    let local = listener.local_addr().context("reading the listen address")?;
    let console = super::console_url(&config, &local.to_string());
    let notifier = super::observability::webhook(&config, &console)?;
    let mut builder = RuntimeBuilder::new(config).tools(super::tools());
    if let Some(db) = db {
        builder = builder.store_url(db);
    }
    if let Some(notifier) = notifier {
        builder = builder.notifier(notifier);
    }
    let runtime = Arc::new(builder.build().await.context("building the runtime")?);
    // Its chains' heads are signed once more before the process exits, even if the runtime is
    // still shared then.
    super::track(&runtime.stores);
    let secret = std::env::var(&runtime.config.webhooks.secret_env).ok().filter(|s| !s.is_empty());
    let loop_hooks =
        feedback_hooks::from_settings(&runtime.config.webhooks, secret.clone()).map_err(anyhow::Error::msg)?;
    let mut state = super::observability::with_metrics(AppState::new(
        runtime.engine.clone(),
        &auth,
        Limits::from_settings(&runtime.config.server),
    )?)
    .with_runs(Arc::new(Runs::new(runtime.clone(), bridle_apps::pipelines::registry())))
    .with_chat(Arc::new(runtime.chat_desk().context("building the operator chat")?))
    .with_loop_hooks(loop_hooks);
    // Keys published by an identity provider are read before the first request, so a wrong URL
    // stops the start instead of refusing every token.
    let keys = state.verifier.refresh().await.context("cannot read the token keys")?;
    let drift_watch = drift_watch(&runtime, secret)?;
    super::mcp::settings_for(&mut state.mcp, local, console);
    let mcp_stop = state.mcp.cancel.clone();
    out::line(&format!("bridle serving on http://{local} (store `{}`)", runtime.stores.url))?;
    out::line(&format!(
        "  API: http://{local}/v1/...   OpenAPI: http://{local}/openapi.json   health: http://{local}/healthz   \
         ready: http://{local}/readyz"
    ))?;
    out::line(
        "  token: bridle token issue --subject requester-1 --tenant tenant-a --services checkout \
         --scopes service:read,service:scale --ttl 1h   (same BRIDLE_JWT_SECRET)",
    )?;
    out::line(&format!("  MCP (Streamable HTTP, same bearer token): http://{local}/mcp   stdio: bridle mcp --stdio"))?;
    if matches!(auth.keys, KeySource::JwksUrl(_) | KeySource::OidcIssuer(_)) {
        out::line(&format!(
            "  token keys: {keys} from {:?}, read again every {} s or on an unknown kid",
            auth.keys,
            auth.jwks_refresh.as_secs()
        ))?;
    }
    match runtime.stores.anchoring.source() {
        Ok(source) => out::line(&format!(
            "  audit heads: signed into `{}` (every {} events, every {} s, at shutdown)",
            source.path.display(),
            runtime.config.audit.head_every_events,
            runtime.config.audit.head_every.as_secs()
        ))?,
        Err(why) => out::line(&format!("  audit heads: {}", why.explain()))?,
    }
    out::line("  stop with Ctrl-C")?;
    let shutdown = async move {
        shutdown_signal().await;
        // Ends open MCP sessions, whose SSE streams would otherwise hold the drain open.
        mcp_stop.cancel();
    };
    serve(listener, router(state), shutdown).await.context("serving")?;
    out::line("bridle: shutting down")?;
    if let Some(watch) = drift_watch {
        watch.abort();
    }
    // Background runs hold no handle on the runtime, so it is shared only while requests run.
    runtime.drain().await;
    if let Ok(runtime) = Arc::try_unwrap(runtime) {
        runtime.shutdown().await;
    }
    telemetry.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
