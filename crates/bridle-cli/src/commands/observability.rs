//! Logs, metrics and the approval webhook of `bridle serve`: set-up only. Logs go to stderr,
//! as text or (with `--log-json` or `BRIDLE_LOG=json`) as JSON lines; the level filter comes
//! from `RUST_LOG` (default `info`). OpenTelemetry export is not wired yet.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bridle_core::config::Config;
use bridle_runtime::gate::Gate;
use bridle_runtime::notify::webhook::WebhookNotifier;
use bridle_server::AppState;
use bridle_server::observe::{install_recorder, spawn_upkeep};
use tracing_subscriber::EnvFilter;

/// How often histogram samples are drained between scrapes.
const UPKEEP: Duration = Duration::from_secs(5);

/// Installs the log subscriber (once; a second call does nothing). JSON when `json` is set or
/// `BRIDLE_LOG` is `json`.
pub fn init_logging(json: bool) {
    let json = json || std::env::var("BRIDLE_LOG").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a person at a terminal, never in files or CI logs.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    // Err: a subscriber is already installed, which is just as good.
    let _ =
        if json { builder.json().with_current_span(true).with_span_list(true).try_init() } else { builder.try_init() };
}

/// `gate` with the `[webhooks]` notifier installed when one is configured; events link to
/// `console_url` unless the configuration names its own. Fails when the secret is missing.
pub fn with_webhook(gate: Gate, config: &Config, console_url: &str) -> anyhow::Result<Gate> {
    let notifier = WebhookNotifier::from_settings(&config.webhooks, Some(console_url)).context("[webhooks]")?;
    Ok(match notifier {
        Some(n) => {
            tracing::info!(url = ?config.webhooks.approval_requested, "approval_requested webhook on");
            gate.with_notifier(Arc::new(n))
        }
        None => gate,
    })
}

/// `state` serving `/metrics` from the process-wide Prometheus recorder.
pub fn with_metrics(state: AppState) -> AppState {
    match install_recorder() {
        Some(handle) => {
            spawn_upkeep(handle.clone(), UPKEEP);
            state.with_metrics(handle)
        }
        None => state,
    }
}
