//! Offline verification of an exported audit log (`bridle audit export` JSONL): no store, only
//! the file. Each line is one event; events of several tenants may interleave, but each tenant's
//! must appear in chain order from seq 1. A problem is named by its line and seq.
//!
//! What a file alone cannot show: events cut off after a tenant's last line. The report gives
//! each tenant's head hash, to compare with `bridle audit verify` on the store or with a head
//! recorded elsewhere.

use std::collections::BTreeMap;
use std::io::BufRead;

use bridle_core::audit::{AuditEvent, ChainVerifier};
use serde::Serialize;

/// One tenant's intact chain in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChain {
    /// Tenant.
    pub tenant: String,
    /// Events verified.
    pub events: u64,
    /// Hash of the last event.
    pub head: String,
    /// Events whose evidence retention dropped (they verify through their digest).
    pub evidence_pruned: u64,
}

/// The first problem found in one tenant's chain (or in an unreadable line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileBreak {
    /// Line of the file, from 1.
    pub line: u64,
    /// Tenant, when the line was an event.
    pub tenant: Option<String>,
    /// Where the chain broke, when the line was an event.
    pub seq: Option<u64>,
    /// What is wrong.
    pub problem: String,
}

/// What verifying a file found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileReport {
    /// Intact chains, by tenant.
    pub tenants: Vec<FileChain>,
    /// Problems: the first of each broken chain, and every unreadable line.
    pub broken: Vec<FileBreak>,
}

impl FileReport {
    /// Whether every chain in the file is intact.
    pub fn ok(&self) -> bool {
        self.broken.is_empty()
    }
}

struct Chain {
    verifier: ChainVerifier,
    head: String,
    pruned: u64,
    broken: bool,
}

/// Verifies an exported JSONL audit log line by line.
pub fn verify_jsonl(input: impl BufRead) -> std::io::Result<FileReport> {
    let mut chains: BTreeMap<String, Chain> = BTreeMap::new();
    let mut broken = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let line_no = u64::try_from(index).unwrap_or(u64::MAX).saturating_add(1);
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let event: AuditEvent = match serde_json::from_str(&line) {
            Ok(e) => e,
            Err(e) => {
                broken.push(FileBreak {
                    line: line_no,
                    tenant: None,
                    seq: None,
                    problem: format!("not an audit event: {e}"),
                });
                continue;
            }
        };
        let tenant = event.record.tenant.clone();
        let chain = chains.entry(tenant.clone()).or_insert_with(|| Chain {
            verifier: ChainVerifier::new(&tenant),
            head: String::new(),
            pruned: 0,
            broken: false,
        });
        if chain.broken {
            continue;
        }
        match chain.verifier.push(&event) {
            Ok(()) => {
                chain.head.clone_from(&event.hash);
                chain.pruned += u64::from(event.evidence_pruned());
            }
            Err(b) => {
                chain.broken = true;
                broken.push(FileBreak { line: line_no, tenant: Some(b.tenant), seq: Some(b.seq), problem: b.problem });
            }
        }
    }
    let tenants = chains
        .into_iter()
        .filter(|(_, c)| !c.broken)
        .map(|(tenant, c)| FileChain { tenant, events: c.verifier.verified(), head: c.head, evidence_pruned: c.pruned })
        .collect();
    Ok(FileReport { tenants, broken })
}
