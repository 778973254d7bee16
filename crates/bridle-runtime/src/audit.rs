//! The audit log at run time: group commit for appends, minimization (masking, metadata-only,
//! retention), and reading it back (chain verification and export, page by page; offline
//! verification of an export).

mod batch;
mod minimize;
mod offline;

pub use batch::BatchingAuditLog;
pub use minimize::{
    MetadataOnlyAuditLog, RETENTION_PERIOD, apply as apply_settings, mask_record, prune_older_than, spawn_retention,
};
pub use offline::{FileBreak, FileChain, FileReport, verify_jsonl};

use bridle_core::audit::{AuditEvent, BrokenLink, ChainVerifier};
use bridle_core::ports::{AuditLog, StoreResult};
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

/// Verifies every tenant's chain and names the first broken link of each.
pub async fn verify(log: &dyn AuditLog) -> StoreResult<VerifyReport> {
    let mut report = VerifyReport { tenants: Vec::new(), broken: Vec::new() };
    'tenants: for tenant in log.tenants().await? {
        let mut v = ChainVerifier::new(&tenant);
        loop {
            let page = log.events(&tenant, v.verified(), PAGE).await?;
            if page.is_empty() {
                break;
            }
            for e in &page {
                if let Err(b) = v.push(e) {
                    report.broken.push(b);
                    continue 'tenants;
                }
            }
        }
        report.tenants.push((tenant, v.verified()));
    }
    Ok(report)
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
