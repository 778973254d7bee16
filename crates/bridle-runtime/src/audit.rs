//! The audit log at run time: group commit for appends, minimization (masking, metadata-only,
//! retention), signed heads that anchor each chain's length (`heads.rs`, `head_log.rs`), and
//! reading it back (chain verification against the heads, export, page by page; offline
//! verification of an export).

mod batch;
pub mod head_log;
pub mod heads;
mod minimize;
mod offline;

pub use batch::BatchingAuditLog;
pub use heads::{HeadEnv, HeadError, HeadKeeper, HeadPlan, HeadSource, Unanchored};
pub(crate) use minimize::{Heads, Prepared, chain, drop_evidence, prepare, seal};
pub use minimize::{
    MetadataOnlyAuditLog, RETENTION_PERIOD, apply as apply_settings, mask_record, prune_older_than, spawn_retention,
};
pub use offline::{FileBreak, FileChain, FileReport, verify_jsonl};

use std::collections::BTreeSet;

use bridle_core::audit::head::{Anchors, TailReport};
use bridle_core::audit::{AuditEvent, BrokenLink, ChainVerifier};
use bridle_core::ports::{AuditLog, StoreError, StoreResult};
use head_log::LineProblem;
use serde::Serialize;

/// Events read per page.
const PAGE: u32 = 1000;

/// The result of verifying every tenant's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Events checked per tenant, for intact chains.
    pub tenants: Vec<(String, u64)>,
    /// The first broken link of each broken chain.
    pub broken: Vec<BrokenLink>,
}

impl VerifyReport {
    /// Whether every chain is intact.
    pub fn ok(&self) -> bool {
        self.broken.is_empty()
    }
}

/// One tenant's chain, checked link by link and, given its signed heads, against them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantCheck {
    /// Events verified before the first broken link (all of them when intact).
    pub verified: u64,
    /// The first broken link.
    pub broken: Option<BrokenLink>,
    /// The chain against its signed heads (when heads were given).
    pub tail: Option<TailReport>,
}

/// Reads `tenant`'s whole chain page by page: every link checked until the first broken one,
/// and every event (also past a broken link) checked against `anchors` when given.
pub async fn check_tenant(log: &dyn AuditLog, tenant: &str, anchors: Option<&Anchors>) -> StoreResult<TenantCheck> {
    let mut chain = ChainVerifier::new(tenant);
    let mut broken = None;
    let mut tail = anchors.map(|a| a.check(tenant));
    let mut after = 0;
    loop {
        let page = log.events(tenant, after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for e in &page {
            if broken.is_none()
                && let Err(b) = chain.push(e)
            {
                broken = Some(b);
            }
            if let Some(t) = &mut tail {
                t.push(e.seq, &e.hash);
            }
        }
        if broken.is_some() && tail.is_none() {
            break;
        }
    }
    Ok(TenantCheck { verified: chain.verified(), broken, tail: tail.map(bridle_core::audit::head::TailCheck::finish) })
}

/// Verifies every tenant's chain and names the first broken link of each.
pub async fn verify(log: &dyn AuditLog) -> StoreResult<VerifyReport> {
    let mut report = VerifyReport { tenants: Vec::new(), broken: Vec::new() };
    for tenant in log.tenants().await? {
        let check = check_tenant(log, &tenant, None).await?;
        match check.broken {
            Some(b) => report.broken.push(b),
            None => report.tenants.push((tenant, check.verified)),
        }
    }
    Ok(report)
}

/// What the head log contributed to a verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeadsStatus {
    /// `checked` (heads read and every chain checked against them), `no_heads_yet` (a key and a
    /// head log path, but no file yet), or why heads are not kept: `no_key`, `in_memory`,
    /// `no_head_log`.
    pub status: &'static str,
    /// The same in words, when the tails are unanchored.
    pub note: Option<String>,
    /// The head log read.
    pub file: Option<String>,
    /// Heads whose signature verified.
    pub trusted: u64,
    /// Lines not trusted (not a head, another key, a bad signature): each fails the verification.
    pub problems: Vec<LineProblem>,
    /// A last line cut short (a write torn by a crash): reported, not trusted, not a failure.
    pub incomplete_last_line: Option<u64>,
}

/// Every chain verified link by link and against the signed heads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnchoredReport {
    /// The chains, link by link.
    #[serde(flatten)]
    pub chains: VerifyReport,
    /// The head log.
    pub heads: HeadsStatus,
    /// Each tenant's chain against its heads (when heads were read).
    pub tails: Vec<TailReport>,
}

impl AnchoredReport {
    /// Whether every chain is intact, no head line was untrusted and no signed head disagrees.
    pub fn ok(&self) -> bool {
        self.chains.ok() && self.heads.problems.is_empty() && self.tails.iter().all(TailReport::ok)
    }
}

/// Why an anchored verification could not be evaluated (it then fails: never "ok").
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The head log exists but could not be read.
    #[error("cannot read the head log `{path}`: {error}")]
    HeadLog {
        /// The file.
        path: String,
        /// Why.
        error: String,
    },
}

/// Reads the head log of `source` (only `tenant`'s heads when given) off the async runtime.
pub async fn read_heads(
    source: &HeadSource,
    tenant: Option<&str>,
) -> Result<Option<head_log::HeadLogRead>, VerifyError> {
    let (path, key, tenant) = (source.path.clone(), source.key, tenant.map(str::to_owned));
    let shown = path.display().to_string();
    tokio::task::spawn_blocking(move || head_log::read(&path, &key, tenant.as_deref()))
        .await
        .map_err(|e| VerifyError::HeadLog { path: shown.clone(), error: e.to_string() })?
        .map_err(|e| VerifyError::HeadLog { path: shown, error: e.to_string() })
}

/// The heads of `source` (or why there are none) as a status, and the anchors read.
pub async fn heads_status(
    source: Result<&HeadSource, Unanchored>,
    tenant: Option<&str>,
) -> Result<(HeadsStatus, Option<Anchors>), VerifyError> {
    let unanchored = |status: &'static str, note: String, file: Option<String>| HeadsStatus {
        status,
        note: Some(note),
        file,
        trusted: 0,
        problems: Vec::new(),
        incomplete_last_line: None,
    };
    let source = match source {
        Ok(s) => s,
        Err(why) => return Ok((unanchored(why.as_str(), why.explain().to_owned(), None), None)),
    };
    let file = Some(source.path.display().to_string());
    let Some(read) = read_heads(source, tenant).await? else {
        let note = format!("no head log at `{}` yet: every tail is unanchored", source.path.display());
        return Ok((unanchored("no_heads_yet", note, file), None));
    };
    let status = HeadsStatus {
        status: "checked",
        note: None,
        file,
        trusted: read.trusted,
        problems: read.problems,
        incomplete_last_line: read.incomplete_last_line,
    };
    Ok((status, Some(read.anchors)))
}

/// Verifies every tenant's chain link by link and against the signed heads of `source` (or
/// says why the tails are unanchored). Tenants that have heads but no events are checked too:
/// their whole chain is the missing tail.
pub async fn verify_anchored(
    log: &dyn AuditLog,
    source: Result<&HeadSource, Unanchored>,
) -> Result<AnchoredReport, VerifyError> {
    let (heads, anchors) = heads_status(source, None).await?;
    let mut chains = VerifyReport { tenants: Vec::new(), broken: Vec::new() };
    let mut tails = Vec::new();
    let mut tenants: BTreeSet<String> = log.tenants().await?.into_iter().collect();
    let stored = tenants.clone();
    if let Some(a) = &anchors {
        tenants.extend(a.tenants().map(str::to_owned));
    }
    for tenant in tenants {
        let check = check_tenant(log, &tenant, anchors.as_ref()).await?;
        match check.broken {
            Some(b) => chains.broken.push(b),
            None if stored.contains(&tenant) => chains.tenants.push((tenant, check.verified)),
            None => {}
        }
        tails.extend(check.tail);
    }
    Ok(AnchoredReport { chains, heads, tails })
}

/// Every event of `tenant` (or of all tenants), in chain order.
pub async fn export(log: &dyn AuditLog, tenant: Option<&str>) -> StoreResult<Vec<AuditEvent>> {
    let tenants = match tenant {
        Some(t) => vec![t.to_owned()],
        None => log.tenants().await?,
    };
    let mut out = Vec::new();
    for t in tenants {
        let mut after = 0;
        loop {
            let page = log.events(&t, after, PAGE).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            out.extend(page);
        }
    }
    Ok(out)
}
