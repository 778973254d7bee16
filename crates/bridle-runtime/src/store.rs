//! Stores: the port implementations, chosen by URL.
//!
//! `memory` (nothing persists), `sqlite://PATH` / `sqlite::memory:` (the embedded default, WAL),
//! `postgres://…` / `postgresql://…` (several replicas sharing one database).
//! Approvals and jobs always come from one backend, because reserving a job consumes an
//! approval in the same transaction.

pub mod memory;
pub mod postgres;
mod rows;
mod sql;
pub mod sqlite;

use std::sync::Arc;

use bridle_core::audit::AuditRecord;
use bridle_core::feedback::FeedbackStore;
use bridle_core::models::ModelRegistry;
use bridle_core::ports::{
    ActionHistory, ActionLedger, ApprovalLedger, AuditLog, BudgetStore, DecisionLog, JobStore, KillSwitches, RunFlags,
    RunLedger, StoreError, StoreHealth,
};

pub use memory::MemoryStore;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// Every port a running Bridle needs, from one backend.
#[derive(Clone)]
pub struct Stores {
    /// Approval ledger.
    pub approvals: Arc<dyn ApprovalLedger>,
    /// Jobs and idempotency keys.
    pub jobs: Arc<dyn JobStore>,
    /// Budget counters.
    pub budgets: Arc<dyn BudgetStore>,
    /// Audit log.
    pub audit: Arc<dyn AuditLog>,
    /// Decision log.
    pub decisions: Arc<dyn DecisionLog>,
    /// Run flags (taint of runs and actors).
    pub run_flags: Arc<dyn RunFlags>,
    /// Run records: owner, calls, leases (gate step 2).
    pub runs: Arc<dyn RunLedger>,
    /// Automatic changes per resource (`[levels] auto_limit`).
    pub actions: Arc<dyn ActionLedger>,
    /// Outcomes per decision (the feedback loop).
    pub feedback: Arc<dyn FeedbackStore>,
    /// Registered models and their stages.
    pub models: Arc<dyn ModelRegistry>,
    /// The kill switches (gate step 2).
    pub kills: Arc<dyn KillSwitches>,
    /// Executed actions and their outcomes.
    pub history: Arc<dyn ActionHistory>,
    /// Operator chat conversations (`POST /v1/chat`).
    pub conversations: Arc<dyn bridle_core::conversation::ConversationStore>,
    /// Whether the backend answers (the readiness probe, `GET /readyz`).
    pub health: Arc<dyn StoreHealth>,
    /// The URL it was opened from (`memory` for the in-memory store), without any password.
    pub url: String,
    /// How the chains' lengths are anchored: a head keeper signing heads, or why not.
    pub anchoring: Anchoring,
    /// `[audit] evidence = "metadata_only"`: records handed to a state change lose their reason
    /// (see [`Stores::evidence`]), as plain appends do through the wrapped `audit`.
    metadata_only: bool,
    /// The backend group-commits its appends itself (SQLite's group writer): a batching layer in
    /// front would only add a hand-over.
    commits_in_groups: bool,
}

/// How a process anchors the audit chains' lengths (`audit/heads.rs`).
#[derive(Clone, Debug)]
pub enum Anchoring {
    /// Heads are signed and appended to a head log by this keeper.
    Kept(Arc<crate::audit::HeadKeeper>),
    /// They are not, for this reason.
    Unanchored(crate::audit::Unanchored),
}

impl Anchoring {
    /// Where verifiers read the heads, or why there are none.
    pub fn source(&self) -> Result<crate::audit::HeadSource, crate::audit::Unanchored> {
        match self {
            Self::Kept(keeper) => Ok(keeper.source()),
            Self::Unanchored(why) => Err(*why),
        }
    }

    /// Stops the periodic flush and writes the last heads (the end of a command or a server);
    /// a failure is logged and returned, never fatal.
    pub async fn close(&self) -> Result<(), crate::audit::heads::FlushError> {
        let Self::Kept(keeper) = self else { return Ok(()) };
        keeper.close().await.map(|_| ()).inspect_err(|e| tracing::warn!(error = %e, "audit heads not written at exit"))
    }
}

impl Stores {
    /// All ports from one backend value.
    pub fn from_backend<S>(backend: Arc<S>, url: &str) -> Self
    where
        S: ApprovalLedger
            + JobStore
            + BudgetStore
            + AuditLog
            + DecisionLog
            + RunFlags
            + RunLedger
            + ActionLedger
            + FeedbackStore
            + ModelRegistry
            + KillSwitches
            + ActionHistory
            + bridle_core::conversation::ConversationStore
            + StoreHealth
            + 'static,
    {
        Self {
            approvals: backend.clone(),
            jobs: backend.clone(),
            budgets: backend.clone(),
            audit: backend.clone(),
            decisions: backend.clone(),
            run_flags: backend.clone(),
            runs: backend.clone(),
            actions: backend.clone(),
            feedback: backend.clone(),
            models: backend.clone(),
            kills: backend.clone(),
            history: backend.clone(),
            conversations: backend.clone(),
            health: backend,
            url: url.to_owned(),
            anchoring: Anchoring::Unanchored(crate::audit::Unanchored::NoKey),
            metadata_only: false,
            commits_in_groups: false,
        }
    }

    /// `records` as `[audit] evidence` asks them to be stored, for a state-change port method
    /// that appends them in its own transaction (the plain `audit` port applies the setting
    /// itself): under `metadata_only` every reason is dropped before it is hashed. Masking
    /// needs nothing here: every store seals what it appends (`crate::audit::seal`).
    #[must_use]
    pub fn evidence(&self, mut records: Vec<AuditRecord>) -> Vec<AuditRecord> {
        // Counted for the head keeper (a head is due after `[audit] head_every_events`).
        if let Anchoring::Kept(keeper) = &self.anchoring {
            keeper.note(records.len());
        }
        if self.metadata_only {
            crate::audit::drop_evidence(&mut records);
        }
        records
    }

    /// The same stores with audit appends group-committed (at most `max_batch` per commit),
    /// unless the backend commits in groups itself (SQLite). Needs a running tokio runtime.
    #[must_use]
    pub fn with_batched_audit(mut self, max_batch: usize) -> Self {
        if self.commits_in_groups {
            return self;
        }
        self.audit = Arc::new(crate::audit::BatchingAuditLog::start(self.audit, max_batch));
        self
    }

    /// The same stores with `[audit]` applied to appends (`evidence = "metadata_only"` drops
    /// every reason before it is stored). Masking needs nothing: every store seals what it appends.
    #[must_use]
    pub fn with_audit_settings(mut self, settings: &bridle_core::config::AuditSettings) -> Self {
        self.audit = crate::audit::apply_settings(self.audit, settings);
        self.metadata_only = settings.evidence == bridle_core::config::EvidenceMode::MetadataOnly;
        self
    }

    /// The same stores with signed audit heads as `plan` says: a [`crate::audit::HeadKeeper`]
    /// started on the current tokio runtime when it has a key and a head log (its appends
    /// counted), else the reason none is kept. Close it with [`Anchoring::close`] at the end.
    pub async fn with_heads(mut self, plan: &crate::audit::HeadPlan) -> Result<Self, StoreError> {
        match crate::audit::HeadKeeper::start(plan, self.audit.clone()).await? {
            Some(keeper) => {
                self.audit = Arc::new(crate::audit::heads::CountingAuditLog::new(self.audit, keeper.clone()));
                self.anchoring = Anchoring::Kept(keeper);
            }
            None => {
                let why = plan.unanchored().unwrap_or(crate::audit::Unanchored::NoKey);
                if why == crate::audit::Unanchored::NoHeadLog {
                    tracing::warn!("{}", why.explain());
                }
                self.anchoring = Anchoring::Unanchored(why);
            }
        }
        Ok(self)
    }

    /// A fresh in-memory store.
    pub fn memory() -> Self {
        let mut stores = Self::from_backend(Arc::new(MemoryStore::new()), "memory");
        stores.anchoring = Anchoring::Unanchored(crate::audit::Unanchored::InMemory);
        stores
    }

    /// Opens the store a URL names: `memory`, `sqlite://PATH`, `sqlite::memory:`,
    /// `postgres://…` or `postgresql://…`.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        if url == "memory" {
            return Ok(Self::memory());
        }
        if url.starts_with("sqlite:") {
            let store = SqliteStore::open(url).await?;
            let mut stores = Self::from_backend(Arc::new(store), url);
            stores.commits_in_groups = true;
            return Ok(stores);
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let store = PostgresStore::open(url).await?;
            // `url` is printed (e.g. at `bridle serve` start-up): never with its password.
            return Ok(Self::from_backend(Arc::new(store), &postgres::redact(url)));
        }
        Err(StoreError::Unavailable(format!(
            "unsupported store URL `{url}` (use `memory`, `sqlite://PATH`, `sqlite::memory:` or `postgres://…`)"
        )))
    }
}

/// Maps a driver error: undecodable rows are corrupt data, everything else an unavailable store.
pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::TypeNotFound { .. } => StoreError::Corrupt(e.to_string()),
        other => StoreError::Unavailable(other.to_string()),
    }
}
