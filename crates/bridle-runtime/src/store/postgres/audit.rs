//! The audit log over PostgreSQL: per-tenant hash chains that stay linear with any number of
//! replicas appending at once.
//!
//! INVARIANT: an append transaction first takes `pg_advisory_xact_lock(AUDIT_LOCK_SPACE,
//! hashtext(tenant))` for every tenant of the batch, in sorted order (so two batches never
//! deadlock), and only then reads each chain's head. The lock is held until commit, and a
//! waiter's next statement sees the previous holder's rows, so every event chains after the
//! committed head: appends of one tenant queue, appends of different tenants run in parallel
//! (a hash collision only serializes two tenants, never breaks a chain). An advisory lock is
//! used rather than a row lock on a head row because a tenant's first append has no row to
//! lock. The `(tenant, seq)` primary key refuses a fork even if the lock were bypassed.
//!
//! Every field the hash covers is its own column and events are rebuilt from those columns
//! alone, so an edit to any stored field breaks `verify_chain` at that row. `at` is stored as
//! unix nanoseconds plus its UTC offset, because the hash covers its RFC 3339 text. A batch is
//! inserted with one `INSERT … SELECT FROM UNNEST(…)` of column arrays.

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use bridle_core::audit::{AuditEvent, AuditRecord};
use bridle_core::ports::{AuditLog, StoreResult};
use sqlx::PgConnection;
use sqlx::postgres::PgRow;
use time::OffsetDateTime;

use super::{PostgresStore, db_err, enum_name, to_i64, to_nanos, to_u64};

/// The first key of the two-key advisory locks that serialize appends per tenant (`audt` as
/// ASCII); the migration lock uses the one-key form, so the two never collide.
const AUDIT_LOCK_SPACE: i32 = 0x6175_6474;
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
/// Events whose evidence one prune statement drops.
const PRUNE_PAGE: i64 = 1000;

/// Stored columns, in insert order.
const COLUMNS: &str = "tenant, seq, kind, call_id, at, at_offset, subject, run_id, incident, tool, \
     policy_version, plan_hash, executor_identity, approval_id, approver, decision, code, reason, total_us, \
     policy_us, adapter_us, prev_hash, hash, evidence_digest, agent_id, model, prompt_hash, tool_schema_hash, agent_source, \
     auth";

/// Inserts a batch: each parameter is one column as an array, in [`COLUMNS`] order.
const INSERT: &str = "INSERT INTO audit_events (tenant, seq, kind, call_id, at, at_offset, subject, run_id, incident,
         tool, policy_version, plan_hash, executor_identity, approval_id, approver, decision, code, reason,
         total_us, policy_us, adapter_us, prev_hash, hash, evidence_digest, agent_id, model, prompt_hash,
         tool_schema_hash, agent_source, auth)
     SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
         $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
         $15::text[], $16::text[], $17::text[], $18::text[], $19::bigint[], $20::bigint[], $21::bigint[],
         $22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::text[])";

/// A batch of events as column arrays.
#[derive(Default)]
struct Columns {
    tenant: Vec<String>,
    seq: Vec<i64>,
    kind: Vec<String>,
    call_id: Vec<String>,
    at: Vec<i64>,
    at_offset: Vec<i64>,
    subject: Vec<String>,
    run_id: Vec<String>,
    incident: Vec<String>,
    tool: Vec<String>,
    policy_version: Vec<String>,
    plan_hash: Vec<Option<String>>,
    executor_identity: Vec<Option<String>>,
    approval_id: Vec<Option<String>>,
    approver: Vec<Option<String>>,
    decision: Vec<Option<String>>,
    code: Vec<Option<String>>,
    reason: Vec<Option<String>>,
    total_us: Vec<i64>,
    policy_us: Vec<i64>,
    adapter_us: Vec<i64>,
    prev_hash: Vec<String>,
    hash: Vec<String>,
    evidence_digest: Vec<Option<String>>,
    agent_id: Vec<Option<String>>,
    model: Vec<Option<String>>,
    prompt_hash: Vec<Option<String>>,
    tool_schema_hash: Vec<Option<String>>,
    agent_source: Vec<Option<&'static str>>,
    auth: Vec<Option<&'static str>>,
}

impl Columns {
    fn push(&mut self, event: &AuditEvent) -> StoreResult<()> {
        let r = &event.record;
        // Messages are built only on failure: this runs for every appended event.
        let what = |field: &str| format!("audit event {} of `{}` {field}", event.seq, r.tenant);
        let int = |field: &str, v: u64| i64::try_from(v).map_or_else(|_| to_i64(&what(field), v), Ok);
        self.seq.push(int("seq", event.seq)?);
        self.at.push(i64::try_from(r.at.unix_timestamp_nanos()).map_or_else(|_| to_nanos(&what("at"), r.at), Ok)?);
        self.decision.push(r.decision.map(|d| enum_name("audit decision", d)).transpose()?);
        self.total_us.push(int("total_us", r.timings.total_us)?);
        self.policy_us.push(int("policy_us", r.timings.policy_us)?);
        self.adapter_us.push(int("adapter_us", r.timings.adapter_us)?);
        self.at_offset.push(i64::from(r.at.offset().whole_seconds()));
        self.tenant.push(r.tenant.clone());
        self.kind.push(r.kind.as_str().to_owned());
        self.call_id.push(r.call_id.clone());
        self.subject.push(r.subject.clone());
        self.run_id.push(r.run_id.clone());
        self.incident.push(r.incident.clone());
        self.tool.push(r.tool.clone());
        self.policy_version.push(r.policy_version.clone());
        self.plan_hash.push(r.plan_hash.clone());
        self.executor_identity.push(r.executor_identity.clone());
        self.approval_id.push(r.approval_id.clone());
        self.approver.push(r.approver.clone());
        self.code.push(r.code.clone());
        self.reason.push(r.reason.clone());
        self.prev_hash.push(event.prev_hash.clone());
        self.hash.push(event.hash.clone());
        self.evidence_digest.push(event.evidence_digest.clone());
        self.agent_id.push(r.versions.agent_id.clone());
        self.model.push(r.versions.model.clone());
        self.prompt_hash.push(r.versions.prompt_hash.clone());
        self.tool_schema_hash.push(r.versions.tool_schema_hash.clone());
        self.agent_source.push(r.versions.agent_source.map(bridle_core::agents::AgentSource::as_str));
        self.auth.push(r.auth.map(bridle_core::audit::OperatorAuth::as_str));
        Ok(())
    }

    async fn insert(self, conn: &mut PgConnection) -> StoreResult<()> {
        sqlx::query(INSERT)
            .bind(self.tenant)
            .bind(self.seq)
            .bind(self.kind)
            .bind(self.call_id)
            .bind(self.at)
            .bind(self.at_offset)
            .bind(self.subject)
            .bind(self.run_id)
            .bind(self.incident)
            .bind(self.tool)
            .bind(self.policy_version)
            .bind(self.plan_hash)
            .bind(self.executor_identity)
            .bind(self.approval_id)
            .bind(self.approver)
            .bind(self.decision)
            .bind(self.code)
            .bind(self.reason)
            .bind(self.total_us)
            .bind(self.policy_us)
            .bind(self.adapter_us)
            .bind(self.prev_hash)
            .bind(self.hash)
            .bind(self.evidence_digest)
            .bind(self.agent_id)
            .bind(self.model)
            .bind(self.prompt_hash)
            .bind(self.tool_schema_hash)
            .bind(self.agent_source)
            .bind(self.auth)
            .execute(conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

/// The last (seq, hash) of a tenant's chain, read after its lock is held.
async fn head(conn: &mut PgConnection, tenant: &str) -> StoreResult<Option<(u64, String)>> {
    let row: Option<(i64, String)> =
        sqlx::query_as("SELECT seq, hash FROM audit_events WHERE tenant = $1 ORDER BY seq DESC LIMIT 1")
            .bind(tenant)
            .fetch_optional(conn)
            .await
            .map_err(db_err)?;
    row.map(|(seq, hash)| Ok((to_u64(&format!("audit seq of `{tenant}`"), seq)?, hash))).transpose()
}

fn decode(row: &PgRow) -> StoreResult<AuditEvent> {
    crate::store::rows::audit_event(row)
}

/// Locks the chains of `records`' tenants (in sorted order), chains the records after their
/// heads and inserts them through `conn`, which must be inside a transaction: the append of
/// [`AuditLog::append`] and of every state change that carries its audit records.
///
/// INVARIANT (lock order): a transaction takes the audit locks LAST, after every row it
/// changes, and takes no other lock while it holds them; so a holder of a tenant's audit lock
/// never waits for a row another transaction holds, and state changes cannot deadlock with
/// appends or with each other. Evidence is masked here, for every path.
pub(super) async fn append_in(conn: &mut PgConnection, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let tenants: BTreeSet<&str> = records.iter().map(|r| r.tenant.as_str()).collect();
    let mut heads: HashMap<String, Option<(u64, String)>> = HashMap::with_capacity(tenants.len());
    for tenant in tenants {
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(AUDIT_LOCK_SPACE)
            .bind(tenant)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        heads.insert(tenant.to_owned(), head(conn, tenant).await?);
    }
    let mut events = Vec::with_capacity(records.len());
    let mut columns = Columns::default();
    for mut record in records {
        crate::audit::mask_record(&mut record)?;
        let prev = heads.get(&record.tenant).and_then(Option::as_ref).map(|(s, h)| (*s, h.as_str()));
        let event = AuditEvent::chain(record, prev);
        heads.insert(event.record.tenant.clone(), Some((event.seq, event.hash.clone())));
        columns.push(&event)?;
        events.push(event);
    }
    columns.insert(conn).await?;
    Ok(events)
}

#[async_trait]
impl AuditLog for PostgresStore {
    async fn append(&self, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.pool.begin().await.map_err(db_err)?;
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
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(tenants)
    }

    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>> {
        // Past the largest storable seq there is nothing to return.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let sql = format!("SELECT {COLUMNS} FROM audit_events WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3");
        let rows = sqlx::query(&sql)
            .bind(tenant)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(decode).collect()
    }

    async fn prune_evidence(&self, before: OffsetDateTime) -> StoreResult<u64> {
        // A cut-off past the storable range means "everything" (or nothing, before it).
        let far = if before > OffsetDateTime::UNIX_EPOCH { i64::MAX } else { i64::MIN };
        let before = i64::try_from(before.unix_timestamp_nanos()).unwrap_or(far);
        let mut pruned = 0;
        // Short statements, so no prune holds many rows locked against a concurrent reader.
        loop {
            let done = sqlx::query(
                "UPDATE audit_events SET reason = NULL WHERE (tenant, seq) IN (
                     SELECT tenant, seq FROM audit_events
                     WHERE reason IS NOT NULL AND evidence_digest IS NOT NULL AND at < $1 LIMIT $2)",
            )
            .bind(before)
            .bind(PRUNE_PAGE)
            .execute(&self.pool)
            .await
            .map_err(db_err)?
            .rows_affected();
            pruned += done;
            if done < PRUNE_PAGE.unsigned_abs() {
                return Ok(pruned);
            }
        }
    }

    async fn heads(&self) -> StoreResult<Vec<bridle_core::audit::head::ChainHead>> {
        let rows: Vec<(String, i64, String)> = sqlx::query_as(HEADS).fetch_all(&self.pool).await.map_err(db_err)?;
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
    fn insert_names_every_column_once_with_one_array_each() {
        let names: Vec<&str> = COLUMNS.split(", ").collect();
        let insert_cols = INSERT.split_once('(').and_then(|(_, rest)| rest.split_once(')')).map(|(cols, _)| cols);
        let insert_cols: Vec<&str> = insert_cols.unwrap_or_default().split(',').map(str::trim).collect();
        assert_eq!(insert_cols, names);
        assert_eq!(INSERT.matches("[]").count(), names.len());
        assert!(INSERT.contains(&format!("${}::", names.len())));
    }
}
