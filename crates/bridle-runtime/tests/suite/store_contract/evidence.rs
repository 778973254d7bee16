//! Audit evidence on every backend: reasons are masked before they are stored, digested apart
//! from the chained metadata, dropped by retention without breaking the chain, and never
//! stored under `evidence = "metadata_only"`.

use bridle_core::audit::{AuditRecord, verify_chain};
use bridle_core::config::{AuditSettings, EvidenceMode};
use bridle_runtime::store::Stores;
use time::Duration;

use super::{T0, memory, postgres, record, sqlite_file, sqlite_memory};

contract!(audit_evidence_is_masked_digested_and_prunable, audit_metadata_only_stores_no_evidence);

/// A record with a reason, `days` after T0.
fn with_reason(tenant: &str, i: u64, days: i64, reason: &str) -> AuditRecord {
    let mut r = record(tenant, i);
    r.at = T0 + Duration::days(days);
    r.reason = Some(reason.to_owned());
    r
}

async fn audit_evidence_is_masked_digested_and_prunable(s: Stores) -> anyhow::Result<()> {
    let secret = "AKIAABCDEFGHIJKLMNOP";
    let mut records = Vec::new();
    for i in 0..6 {
        let (tenant, days) = if i % 2 == 0 { ("tenant-a", i64::try_from(i)?) } else { ("tenant-b", 10) };
        records.push(with_reason(tenant, i, days, &format!("adapter error {i}: key {secret} for ops@example.com")));
    }
    let mut plain = record("tenant-a", 1);
    plain.reason = None;
    records.push(plain);
    let appended = s.audit.append(records).await?;
    for e in &appended {
        let reason = e.record.reason.as_deref().unwrap_or_default();
        anyhow::ensure!(!reason.contains(secret) && !reason.contains("ops@example.com"), "stored unmasked: {reason}");
        anyhow::ensure!(e.evidence_digest.is_some() == e.record.reason.is_some(), "digest iff evidence: {e:?}");
    }
    for tenant in ["tenant-a", "tenant-b"] {
        let stored = s.audit.events(tenant, 0, 100).await?;
        let mine: Vec<_> = appended.iter().filter(|e| e.record.tenant == tenant).cloned().collect();
        assert_eq!(stored, mine, "{tenant}: masked evidence and digests round-trip");
    }
    // Retention: evidence before day 3 goes (tenant-a's events of days 0 and 2), nothing else.
    assert_eq!(s.audit.prune_evidence(T0 + Duration::days(3)).await?, 2);
    assert_eq!(s.audit.prune_evidence(T0 + Duration::days(3)).await?, 0, "a second prune finds nothing");
    let a = s.audit.events("tenant-a", 0, 100).await?;
    let pruned: Vec<u64> = a.iter().filter(|e| e.evidence_pruned()).map(|e| e.seq).collect();
    assert_eq!(pruned, [1, 2]);
    assert!(a.iter().all(|e| e.evidence_digest.is_some() || e.record.reason.is_none()));
    assert_eq!(a.get(2).and_then(|e| e.record.reason.as_deref()).map(|r| r.starts_with("adapter error 4")), Some(true));
    for tenant in ["tenant-a", "tenant-b"] {
        let events = s.audit.events(tenant, 0, 100).await?;
        verify_chain(tenant, &events).map_err(|b| anyhow::anyhow!("{b:?}"))?;
    }
    // A prune past everything drops the rest; the chains still verify and keep every event.
    assert_eq!(s.audit.prune_evidence(T0 + Duration::days(365)).await?, 4);
    let report = bridle_runtime::audit::verify(s.audit.as_ref()).await?;
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.tenants, [("tenant-a".to_owned(), 4), ("tenant-b".to_owned(), 3)]);
    // Chains keep growing after a prune.
    s.audit.append(vec![with_reason("tenant-a", 9, 400, "later")]).await?;
    assert!(bridle_runtime::audit::verify(s.audit.as_ref()).await?.ok());
    Ok(())
}

async fn audit_metadata_only_stores_no_evidence(s: Stores) -> anyhow::Result<()> {
    let settings = AuditSettings { evidence: EvidenceMode::MetadataOnly, ..AuditSettings::default() };
    let s = s.with_audit_settings(&settings);
    let events = s.audit.append((0..3).map(|i| with_reason("tenant-a", i, 0, "`replicas` 50 > 10")).collect()).await?;
    assert!(events.iter().all(|e| e.record.reason.is_none() && e.evidence_digest.is_none()));
    let stored = s.audit.events("tenant-a", 0, 10).await?;
    assert_eq!(stored, events);
    assert!(stored.iter().all(|e| e.record.code.is_some() || e.record.plan_hash.is_some()));
    assert_eq!(verify_chain("tenant-a", &stored).ok(), Some(3));
    Ok(())
}
