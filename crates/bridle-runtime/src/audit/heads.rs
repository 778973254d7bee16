//! Signed audit heads at run time: where they go and with which key ([`HeadPlan`]), and the
//! writer that appends them ([`HeadKeeper`]).
//!
//! Design: the keeper does not intercept appends. When a head is due it reads the head of every
//! chain from the store (`AuditLog::heads`, one query) and signs each one that changed since
//! this process last wrote it (or since it started). So events appended inside store
//! transactions (approvals, grants, job moves, kill switches, feedback: `append_in`), through the
//! group-commit writer (`audit/batch.rs`), or by another replica, are covered exactly like the
//! gate's own appends, and nothing is added to a gate call but one atomic counter increment.
//!
//! A head is due after `[audit] head_every_events` events were handed to this process's audit
//! log (counted by [`CountingAuditLog`] and `Stores::evidence`), every `head_every_seconds`
//! while chains change, and when the process ends ([`HeadKeeper::close`]: `bridle serve` at
//! shutdown, every one-shot command before it exits). Flushes run on a background task; a
//! failed one (store, file, webhook) is logged and the same heads are tried again at the next
//! one: a head-log failure never fails a call.
//!
//! The key: `BRIDLE_AUDIT_SIGNING_KEY` holds the key's text (`bridle audit keygen`), or
//! `BRIDLE_AUDIT_SIGNING_KEY_FILE` / `[audit] signing_key_file` names a file holding it. Without
//! a key nothing is signed and every chain's tail is unanchored ([`Unanchored::NoKey`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bridle_core::audit::head::{ChainHead, HeadKey, HeadPublicKey, SignedHead};
use bridle_core::audit::{AuditEvent, AuditRecord};
use bridle_core::config::AuditSettings;
use bridle_core::ports::{AuditLog, StoreError, StoreResult};
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::head_log;

/// The signing key's text.
pub const ENV_KEY: &str = "BRIDLE_AUDIT_SIGNING_KEY";
/// A file holding the signing key's text.
pub const ENV_KEY_FILE: &str = "BRIDLE_AUDIT_SIGNING_KEY_FILE";
/// The head log file (overrides `[audit] heads`).
pub const ENV_HEADS: &str = "BRIDLE_AUDIT_HEADS";
/// Largest key file read (the key is one line of about 90 bytes).
const MAX_KEY_FILE: u64 = 4096;
/// Heads waiting for the webhook at most; older ones are dropped (the file keeps them).
const WEBHOOK_QUEUE: usize = 10_000;
/// Time allowed for one webhook delivery.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// Environment settings of the heads, read once (tests pass their own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadEnv {
    /// `BRIDLE_AUDIT_SIGNING_KEY`: the key's text.
    pub signing_key: Option<String>,
    /// `BRIDLE_AUDIT_SIGNING_KEY_FILE`: a file holding it.
    pub signing_key_file: Option<String>,
    /// `BRIDLE_AUDIT_HEADS`: the head log file.
    pub heads: Option<String>,
}

impl HeadEnv {
    /// The process environment.
    pub fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Self { signing_key: var(ENV_KEY), signing_key_file: var(ENV_KEY_FILE), heads: var(ENV_HEADS) }
    }
}

/// The key or the settings are unusable (start-up fails: a configured key is never ignored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// The key is ambiguous, unreadable or malformed (the message names no key material).
    #[error("audit signing key: {0}")]
    Key(String),
    /// No key could be generated: the system gave no randomness.
    #[error("no system randomness: {0}")]
    Randomness(getrandom::Error),
}

/// Why the chains' tails are not anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unanchored {
    /// No signing key is set.
    NoKey,
    /// The store is in memory: nothing outlives the process, there is nothing to anchor.
    InMemory,
    /// No head log: a PostgreSQL store without `[audit] heads`.
    NoHeadLog,
}

impl Unanchored {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NoKey => "no_key",
            Self::InMemory => "in_memory",
            Self::NoHeadLog => "no_head_log",
        }
    }

    /// What it means, for people.
    pub const fn explain(self) -> &'static str {
        match self {
            Self::NoKey => {
                "no audit signing key is set (BRIDLE_AUDIT_SIGNING_KEY, BRIDLE_AUDIT_SIGNING_KEY_FILE or [audit] \
                 signing_key_file): heads are not signed and the tail of every chain is unanchored (a deleted tail \
                 cannot be seen)"
            }
            Self::InMemory => "the store is in memory: no head log is kept",
            Self::NoHeadLog => {
                "audit heads are not kept for this store: a postgres:// store needs `[audit] heads = \"PATH\"` (a file \
                 every replica can append to) or BRIDLE_AUDIT_HEADS; the tail of every chain is unanchored"
            }
        }
    }
}

/// Where a verifier finds the heads and how it checks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadSource {
    /// The public half of the signing key.
    pub key: HeadPublicKey,
    /// The head log file.
    pub path: PathBuf,
}

/// The resolved settings: key, head log, cadence, webhook.
#[derive(Debug, Clone)]
pub struct HeadPlan {
    key: Option<HeadKey>,
    log: Result<PathBuf, Unanchored>,
    every_events: u64,
    every: Duration,
    webhook: Option<String>,
}

impl HeadPlan {
    /// Resolves `[audit]`, the environment and the store's URL. The head log: `BRIDLE_AUDIT_HEADS`,
    /// else `[audit] heads`, else `PATH.heads` beside a `sqlite://PATH` store; none for an
    /// in-memory store or PostgreSQL without one. The key: `BRIDLE_AUDIT_SIGNING_KEY` (the text),
    /// else `BRIDLE_AUDIT_SIGNING_KEY_FILE`, else `[audit] signing_key_file`.
    pub fn resolve(settings: &AuditSettings, store_url: &str, env: &HeadEnv) -> Result<Self, HeadError> {
        let key = resolve_key(settings, env)?;
        let log = match env.heads.as_ref().or(settings.heads.as_ref()) {
            Some(path) => Ok(PathBuf::from(path)),
            None => default_log(store_url),
        };
        Ok(Self {
            key,
            log,
            every_events: settings.head_every_events.max(1),
            every: settings.head_every.max(Duration::from_millis(10)),
            webhook: settings.heads_webhook.clone(),
        })
    }

    /// Why chains are not anchored, or `None` when heads are signed and kept.
    pub fn unanchored(&self) -> Option<Unanchored> {
        match (&self.key, &self.log) {
            (_, Err(why)) => Some(*why),
            (None, Ok(_)) => Some(Unanchored::NoKey),
            (Some(_), Ok(_)) => None,
        }
    }

    /// Where a verifier reads the heads and with which public key.
    pub fn source(&self) -> Result<HeadSource, Unanchored> {
        let path = self.log.clone()?;
        let key = self.key.as_ref().ok_or(Unanchored::NoKey)?.public();
        Ok(HeadSource { key, path })
    }

    /// The head log file, when one is kept.
    pub fn log(&self) -> Result<&Path, Unanchored> {
        self.log.as_deref().map_err(|why| *why)
    }

    /// Whether a signing key is set.
    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }
}

fn resolve_key(settings: &AuditSettings, env: &HeadEnv) -> Result<Option<HeadKey>, HeadError> {
    if env.signing_key.is_some() && env.signing_key_file.is_some() {
        return Err(HeadError::Key(format!("set {ENV_KEY} or {ENV_KEY_FILE}, not both")));
    }
    let text = match (&env.signing_key, env.signing_key_file.as_ref().or(settings.signing_key_file.as_ref())) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => crate::bundled::read_text_capped(Path::new(file), MAX_KEY_FILE)
            .map_err(|e| HeadError::Key(format!("key file: {e}")))?,
        (None, None) => return Ok(None),
    };
    HeadKey::parse(&text).map(Some).map_err(|e| HeadError::Key(e.to_string()))
}

/// `PATH.heads` beside a `sqlite://PATH` database; none for memory and PostgreSQL.
fn default_log(store_url: &str) -> Result<PathBuf, Unanchored> {
    if store_url.starts_with("sqlite:") {
        let Some(file) = crate::store::sqlite::database_file(store_url) else { return Err(Unanchored::InMemory) };
        let mut name = file.into_os_string();
        name.push(".heads");
        return Ok(PathBuf::from(name));
    }
    if store_url == "memory" { Err(Unanchored::InMemory) } else { Err(Unanchored::NoHeadLog) }
}

/// A fresh signing key from the system's randomness (`bridle audit keygen`).
pub fn generate_key() -> Result<HeadKey, HeadError> {
    let mut seed = [0_u8; 32];
    getrandom::fill(&mut seed).map_err(HeadError::Randomness)?;
    let key = HeadKey::from_seed(&seed);
    seed.fill(0);
    Ok(key)
}

/// What one flush did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Heads appended to the log.
    pub written: usize,
}

/// Why a flush did not complete (its heads are tried again at the next one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlushError {
    /// The chains' heads could not be read.
    #[error("reading the chains' heads: {0}")]
    Store(StoreError),
    /// The head log could not be appended to.
    #[error("appending to the head log `{path}`: {error}")]
    File {
        /// The log.
        path: String,
        /// The I/O error.
        error: String,
    },
}

/// What the keeper remembers between flushes.
#[derive(Default)]
struct State {
    /// The last head this process wrote (or saw at start) per tenant.
    written: HashMap<String, (u64, String)>,
    /// Heads the webhook has not taken yet.
    webhook_queue: Vec<SignedHead>,
}

/// Signs and appends the heads of changed chains: periodically, after enough events, and at
/// the end ([`HeadKeeper::close`]).
pub struct HeadKeeper {
    audit: Arc<dyn AuditLog>,
    key: HeadKey,
    path: PathBuf,
    every_events: u64,
    webhook: Option<(reqwest::Client, String)>,
    noted: AtomicU64,
    wake: Arc<Notify>,
    state: tokio::sync::Mutex<State>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for HeadKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeadKeeper").field("path", &self.path).finish_non_exhaustive()
    }
}

impl HeadKeeper {
    /// Starts a keeper over `audit` when `plan` has a key and a head log (else `None`): reads
    /// the chains' current heads (only their later changes are signed by this process) and
    /// starts the periodic flush on the current tokio runtime.
    pub async fn start(plan: &HeadPlan, audit: Arc<dyn AuditLog>) -> StoreResult<Option<Arc<Self>>> {
        let (Some(key), Ok(path)) = (&plan.key, &plan.log) else { return Ok(None) };
        let webhook = match &plan.webhook {
            Some(url) => {
                crate::llm::openai::install_tls_provider();
                let client = reqwest::Client::builder()
                    .timeout(WEBHOOK_TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| StoreError::Unavailable(format!("audit heads webhook client: {e}")))?;
                Some((client, url.clone()))
            }
            None => None,
        };
        let written = audit.heads().await?.into_iter().map(|h| (h.tenant, (h.seq, h.hash))).collect();
        let keeper = Arc::new(Self {
            audit,
            key: key.clone(),
            path: path.clone(),
            every_events: plan.every_events,
            webhook,
            noted: AtomicU64::new(0),
            wake: Arc::new(Notify::new()),
            state: tokio::sync::Mutex::new(State { written, webhook_queue: Vec::new() }),
            task: Mutex::new(None),
        });
        let task = tokio::spawn(periodic(Arc::downgrade(&keeper), keeper.wake.clone(), plan.every));
        *keeper.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        Ok(Some(keeper))
    }

    /// Counts `events` handed to the audit log; wakes the flush once `head_every_events` are
    /// reached. One atomic add: this is on the gate's path.
    pub fn note(&self, events: usize) {
        let events = u64::try_from(events).unwrap_or(u64::MAX);
        let before = self.noted.fetch_add(events, Ordering::Relaxed);
        if before < self.every_events && before.saturating_add(events) >= self.every_events {
            self.wake.notify_one();
        }
    }

    /// Where verifiers read these heads.
    pub fn source(&self) -> HeadSource {
        HeadSource { key: self.key.public(), path: self.path.clone() }
    }

    /// Signs and appends the head of every chain that changed since the last flush, then hands
    /// them to the webhook (if any; its failures are logged and retried at the next flush).
    pub async fn flush(&self) -> Result<Flushed, FlushError> {
        let mut state = self.state.lock().await;
        self.noted.store(0, Ordering::Relaxed);
        let heads = self.audit.heads().await.map_err(FlushError::Store)?;
        let at = now_text();
        let changed: Vec<SignedHead> = heads
            .iter()
            .filter(|h| state.written.get(&h.tenant).is_none_or(|(seq, hash)| *seq != h.seq || *hash != h.hash))
            .map(|h| self.key.sign(h, &at))
            .collect();
        if !changed.is_empty() {
            let (path, lines) = (self.path.clone(), changed.clone());
            let appended = tokio::task::spawn_blocking(move || head_log::append(&path, &lines))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()));
            if let Err(error) = appended {
                return Err(FlushError::File { path: self.path.display().to_string(), error });
            }
            for ChainHead { tenant, seq, hash } in heads {
                state.written.insert(tenant, (seq, hash));
            }
        }
        let written = changed.len();
        if let Some((client, url)) = &self.webhook {
            state.webhook_queue.extend(changed);
            let excess = state.webhook_queue.len().saturating_sub(WEBHOOK_QUEUE);
            if excess > 0 {
                tracing::warn!(
                    dropped = excess,
                    "audit heads webhook is behind; the oldest heads stay in the file only"
                );
                state.webhook_queue.drain(..excess).for_each(drop);
            }
            if !state.webhook_queue.is_empty() {
                match deliver(client, url, &state.webhook_queue).await {
                    Ok(()) => state.webhook_queue.clear(),
                    Err(e) => tracing::warn!(error = %e, waiting = state.webhook_queue.len(),
                        "audit heads webhook failed; retrying at the next flush"),
                }
            }
        }
        Ok(Flushed { written })
    }

    /// Stops the periodic flush and flushes one last time (the end of a command, the shutdown of
    /// a server). Safe to call more than once.
    pub async fn close(&self) -> Result<Flushed, FlushError> {
        if let Some(task) = self.task.lock().unwrap_or_else(PoisonError::into_inner).take() {
            task.abort();
        }
        self.flush().await
    }
}

impl Drop for HeadKeeper {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap_or_else(PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

/// Now, as signed: RFC 3339 in UTC, to the millisecond.
fn now_text() -> String {
    let now = OffsetDateTime::now_utc();
    let now = now.replace_millisecond(now.millisecond()).unwrap_or(now);
    now.format(&Rfc3339).unwrap_or_default()
}

async fn periodic(keeper: Weak<HeadKeeper>, wake: Arc<Notify>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = wake.notified() => {}
        }
        let Some(keeper) = keeper.upgrade() else { return };
        match keeper.flush().await {
            Ok(Flushed { written: 0 }) => {}
            Ok(Flushed { written }) => tracing::debug!(written, "audit heads written"),
            Err(e) => tracing::warn!(error = %e, "audit heads not written; retrying at the next flush"),
        }
    }
}

/// One POST of `heads` as `{"event": "audit_heads", "heads": [...]}`. The heads carry their own
/// Ed25519 signatures, so the request itself is not signed.
async fn deliver(client: &reqwest::Client, url: &str, heads: &[SignedHead]) -> Result<(), String> {
    let body = serde_json::json!({"event": "audit_heads", "heads": heads}).to_string();
    let response = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(crate::notify::webhook::EVENT_HEADER, "audit_heads")
        .body(body)
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    if status.is_success() { Ok(()) } else { Err(format!("status {}", status.as_u16())) }
}

/// An [`AuditLog`] that counts what it appends for the keeper (so a head is due after
/// `head_every_events`); everything else goes straight to `inner`.
pub struct CountingAuditLog {
    inner: Arc<dyn AuditLog>,
    keeper: Arc<HeadKeeper>,
}

impl CountingAuditLog {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn AuditLog>, keeper: Arc<HeadKeeper>) -> Self {
        Self { inner, keeper }
    }
}

#[async_trait]
impl AuditLog for CountingAuditLog {
    async fn append(&self, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
        let events = self.inner.append(records).await?;
        self.keeper.note(events.len());
        Ok(events)
    }

    async fn tenants(&self) -> StoreResult<Vec<String>> {
        self.inner.tenants().await
    }

    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>> {
        self.inner.events(tenant, after, limit).await
    }

    async fn prune_evidence(&self, before: OffsetDateTime) -> StoreResult<u64> {
        self.inner.prune_evidence(before).await
    }

    async fn heads(&self) -> StoreResult<Vec<ChainHead>> {
        self.inner.heads().await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(key: Option<&str>, file: Option<&str>) -> HeadEnv {
        HeadEnv { signing_key: key.map(str::to_owned), signing_key_file: file.map(str::to_owned), heads: None }
    }

    #[test]
    fn the_head_log_defaults_beside_a_sqlite_file_and_nowhere_else() {
        let s = AuditSettings::default();
        let key = HeadKey::from_seed(&[3; 32]).to_text();
        let plan = HeadPlan::resolve(&s, "sqlite://data/b.db?synchronous=full", &env(Some(&key), None)).unwrap();
        assert_eq!(plan.log().unwrap(), Path::new("data/b.db.heads"));
        assert_eq!(plan.unanchored(), None);
        for (url, why) in [
            ("memory", Unanchored::InMemory),
            ("sqlite::memory:", Unanchored::InMemory),
            ("postgres://u@h/db", Unanchored::NoHeadLog),
        ] {
            let plan = HeadPlan::resolve(&s, url, &env(Some(&key), None)).unwrap();
            assert_eq!(plan.unanchored(), Some(why), "{url}");
        }
        let configured = AuditSettings { heads: Some("/srv/heads.jsonl".into()), ..AuditSettings::default() };
        let plan = HeadPlan::resolve(&configured, "postgres://u@h/db", &env(Some(&key), None)).unwrap();
        assert_eq!(plan.source().unwrap().path, Path::new("/srv/heads.jsonl"));
        let plan = HeadPlan::resolve(&configured, "postgres://u@h/db", &env(None, None)).unwrap();
        assert_eq!(plan.unanchored(), Some(Unanchored::NoKey));
    }

    #[test]
    fn a_bad_or_ambiguous_key_is_refused_without_showing_it() {
        let s = AuditSettings::default();
        let e = HeadPlan::resolve(&s, "memory", &env(Some("bridle-audit-ed25519:00"), None)).unwrap_err();
        assert!(e.to_string().contains("64 hex digits"), "{e}");
        let e = HeadPlan::resolve(&s, "memory", &env(Some("x"), Some("/k"))).unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let e = HeadPlan::resolve(&s, "memory", &env(None, Some("/nonexistent/bridle.key"))).unwrap_err();
        assert!(e.to_string().contains("key file"), "{e}");
    }

    #[test]
    fn generated_keys_differ_and_read_back() {
        let (a, b) = (generate_key().unwrap(), generate_key().unwrap());
        assert_ne!(a.public(), b.public());
        assert_eq!(HeadKey::parse(&a.to_text()).unwrap().public(), a.public());
    }
}
