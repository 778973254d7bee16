//! The audit log over SQLite: per-tenant hash chains appended in one transaction per batch.
//!
//! Every field the hash covers is its own column and events are rebuilt from those columns
//! alone, so an edit to any stored field breaks `verify_chain` at that row. `at` is stored as
//! unix nanoseconds plus its UTC offset, because the hash covers its RFC 3339 text.

use std::collections::HashMap;

use async_trait::async_trait;
use bridle_core::audit::{AuditEvent, AuditRecord};
use bridle_core::ports::{AuditLog, StoreResult};
use sqlx::SqliteConnection;
use sqlx::sqlite::SqliteRow;
use time::OffsetDateTime;

use super::{SqliteStore, db_err, enum_name, to_i64, to_nanos, to_u64};

/// Stored columns, in insert order.
const COLUMNS: &str = "tenant, seq, kind, call_id, at, at_offset, subject, run_id, incident, tool, \
     policy_version, plan_hash, executor_identity, approval_id, approver, decision, code, reason, total_us, \
     policy_us, adapter_us, prev_hash, hash, evidence_digest, agent_id, model, prompt_hash, tool_schema_hash, agent_source, \
     auth";
/// How many columns [`COLUMNS`] names.
const WIDTH: usize = 30;
/// Rows per INSERT statement, largest first: a batch is cut into these sizes so only a few
/// distinct statements are ever prepared (30 × 100 parameters stays far below SQLite's limit).
const CHUNKS: [usize; 3] = [100, 10, 1];
/// The last (seq, hash) of every tenant's chain: the tenants by a skip-scan over the primary key,
/// then one index probe each for its last event.
const HEADS: &str = "WITH RECURSIVE t(tenant) AS (
         SELECT MIN(tenant) FROM audit_events
         UNION ALL
         SELECT (SELECT MIN(tenant) FROM audit_events WHERE tenant > t.tenant) FROM t
         WHERE t.tenant IS NOT NULL
     )
     SELECT e.tenant, e.seq, e.hash FROM t
     JOIN audit_events e ON e.tenant = t.tenant
         AND e.seq = (SELECT MAX(seq) FROM audit_events WHERE tenant = t.tenant)";
/// Events whose evidence one prune transaction drops.
const PRUNE_PAGE: i64 = 1000;

/// An event converted to its column values.
struct Stored<'a> {
    event: &'a AuditEvent,
    seq: i64,
    kind: String,
    at: i64,
    at_offset: i64,
    decision: Option<String>,
    total_us: i64,
    policy_us: i64,
    adapter_us: i64,
    agent_source: Option<&'static str>,
}

impl<'a> Stored<'a> {
    fn new(event: &'a AuditEvent) -> StoreResult<Self> {
        let r = &event.record;
        // Messages are built only on failure: this runs for every appended event.
        let what = |field: &str| format!("audit event {} of `{}` {field}", event.seq, r.tenant);
        let int = |field: &str, v: u64| i64::try_from(v).map_or_else(|_| to_i64(&what(field), v), Ok);
        Ok(Self {
            event,
            seq: int("seq", event.seq)?,
            kind: r.kind.as_str().to_owned(),
            at: i64::try_from(r.at.unix_timestamp_nanos()).map_or_else(|_| to_nanos(&what("at"), r.at), Ok)?,
            at_offset: i64::from(r.at.offset().whole_seconds()),
            decision: r.decision.map(|d| enum_name("audit decision", d)).transpose()?,
            total_us: int("total_us", r.timings.total_us)?,
            policy_us: int("policy_us", r.timings.policy_us)?,
            adapter_us: int("adapter_us", r.timings.adapter_us)?,
            agent_source: r.versions.agent_source.map(bridle_core::agents::AgentSource::as_str),
        })
    }
}

fn insert_sql(rows: usize) -> String {
    let one = format!("({})", vec!["?"; WIDTH].join(", "));
    format!("INSERT INTO audit_events ({COLUMNS}) VALUES {}", vec![one; rows].join(", "))
}

async fn insert(conn: &mut SqliteConnection, rows: &[Stored<'_>]) -> StoreResult<()> {
    let sql = insert_sql(rows.len());
    let mut q = sqlx::query(&sql);
    for s in rows {
        let r = &s.event.record;
        q = q
            .bind(&r.tenant)
            .bind(s.seq)
            .bind(&s.kind)
            .bind(&r.call_id)
            .bind(s.at)
            .bind(s.at_offset)
            .bind(&r.subject)
            .bind(&r.run_id)
            .bind(&r.incident)
            .bind(&r.tool)
            .bind(&r.policy_version)
            .bind(&r.plan_hash)
            .bind(&r.executor_identity)
            .bind(&r.approval_id)
            .bind(&r.approver)
            .bind(&s.decision)
            .bind(&r.code)
            .bind(&r.reason)
            .bind(s.total_us)
            .bind(s.policy_us)
            .bind(s.adapter_us)
            .bind(&s.event.prev_hash)
            .bind(&s.event.hash)
            .bind(&s.event.evidence_digest)
            .bind(&r.versions.agent_id)
            .bind(&r.versions.model)
            .bind(&r.versions.prompt_hash)
            .bind(&r.versions.tool_schema_hash)
            .bind(s.agent_source)
            .bind(r.auth.map(bridle_core::audit::OperatorAuth::as_str));
    }
    q.execute(conn).await.map_err(db_err)?;
    Ok(())
}

/// The last (seq, hash) of a tenant's chain, read inside the append transaction.
async fn head(conn: &mut SqliteConnection, tenant: &str) -> StoreResult<Option<(u64, String)>> {
    let row: Option<(i64, String)> =
        sqlx::query_as("SELECT seq, hash FROM audit_events WHERE tenant = ? ORDER BY seq DESC LIMIT 1")
            .bind(tenant)
            .fetch_optional(conn)
            .await
            .map_err(db_err)?;
    row.map(|(seq, hash)| Ok((to_u64(&format!("audit seq of `{tenant}`"), seq)?, hash))).transpose()
}

fn decode(row: &SqliteRow) -> StoreResult<AuditEvent> {
    crate::store::rows::audit_event(row)
}

/// Chains `records` after their tenants' heads and inserts them through `conn`, which must be
/// inside a write transaction (`BEGIN IMMEDIATE` on the one writer connection): the append of
/// [`AuditLog::append`] and of every state change that carries its audit records.
///
/// INVARIANT: heads are read under the write lock, so no other append interleaves; evidence is
/// masked here, for every path.
pub(super) async fn append_in(conn: &mut SqliteConnection, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
    let mut heads: HashMap<String, Option<(u64, String)>> = HashMap::new();
    let mut events = Vec::with_capacity(records.len());
    for mut record in records {
        crate::audit::mask_record(&mut record)?;
        if !heads.contains_key(&record.tenant) {
            let last = head(conn, &record.tenant).await?;
            heads.insert(record.tenant.clone(), last);
        }
        let prev = heads.get(&record.tenant).and_then(Option::as_ref).map(|(s, h)| (*s, h.as_str()));
        let event = AuditEvent::chain(record, prev);
        heads.insert(event.record.tenant.clone(), Some((event.seq, event.hash.clone())));
        events.push(event);
    }
    let stored = events.iter().map(Stored::new).collect::<StoreResult<Vec<_>>>()?;
    let mut rest = stored.as_slice();
    for size in CHUNKS {
        while rest.len() >= size {
            let (chunk, tail) = rest.split_at(size);
            insert(conn, chunk).await?;
            rest = tail;
        }
    }
    Ok(events)
}

#[async_trait]
impl AuditLog for SqliteStore {
    async fn append(&self, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.write_tx().await?;
        let events = append_in(&mut tx, records).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(events)
    }

    async fn tenants(&self) -> StoreResult<Vec<String>> {
        // A skip-scan over the primary key: one index probe per tenant, not one per event.
        let tenants: Vec<String> = sqlx::query_scalar(
            "WITH RECURSIVE t(tenant) AS (
                 SELECT MIN(tenant) FROM audit_events
                 UNION ALL
                 SELECT (SELECT MIN(tenant) FROM audit_events WHERE tenant > t.tenant) FROM t
                 WHERE t.tenant IS NOT NULL
             )
             SELECT tenant FROM t WHERE tenant IS NOT NULL",
        )
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)?;
        Ok(tenants)
    }

    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>> {
        // Past the largest storable seq there is nothing to return.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let sql = format!("SELECT {COLUMNS} FROM audit_events WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?");
        let rows = sqlx::query(&sql)
            .bind(tenant)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(decode).collect()
    }

    async fn prune_evidence(&self, before: OffsetDateTime) -> StoreResult<u64> {
        // A cut-off past the storable range means "everything" (or nothing, before it).
        let far = if before > OffsetDateTime::UNIX_EPOCH { i64::MAX } else { i64::MIN };
        let before = i64::try_from(before.unix_timestamp_nanos()).unwrap_or(far);
        let mut pruned = 0;
        // Short transactions, so appends wait for one page at a time, never for the whole prune.
        loop {
            let mut tx = self.write_tx().await?;
            let done = sqlx::query(
                "UPDATE audit_events SET reason = NULL WHERE (tenant, seq) IN (
                     SELECT tenant, seq FROM audit_events
                     WHERE reason IS NOT NULL AND evidence_digest IS NOT NULL AND at < ? LIMIT ?)",
            )
            .bind(before)
            .bind(PRUNE_PAGE)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            tx.commit().await.map_err(db_err)?;
            pruned += done;
            if done < PRUNE_PAGE.unsigned_abs() {
                return Ok(pruned);
            }
        }
    }

    async fn heads(&self) -> StoreResult<Vec<bridle_core::audit::head::ChainHead>> {
        let rows: Vec<(String, i64, String)> = sqlx::query_as(HEADS).fetch_all(&self.reader).await.map_err(db_err)?;
        rows.into_iter()
            .map(|(tenant, seq, hash)| {
                let seq = to_u64(&format!("audit seq of `{tenant}`"), seq)?;
                Ok(bridle_core::audit::head::ChainHead { tenant, seq, hash })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_statement_has_one_placeholder_per_column() {
        assert_eq!(COLUMNS.split(", ").count(), WIDTH);
        let sql = insert_sql(3);
        assert_eq!(sql.matches('?').count(), 3 * WIDTH);
    }
}
