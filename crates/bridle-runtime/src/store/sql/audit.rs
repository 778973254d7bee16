//! The audit log: per-tenant hash chains appended in one transaction per batch, linear with any
//! number of writers appending at once.
//!
//! INVARIANT: an append transaction takes [`Lock::Chain`] for every tenant of the batch, in
//! sorted order (so two batches never deadlock), and only then reads each chain's head; the
//! lock is held until commit, so every event chains after the committed head. On SQLite the
//! writer's `BEGIN IMMEDIATE` lock already excludes every other append; on PostgreSQL it is an
//! advisory lock per tenant (see `postgres.rs`), so appends of one tenant queue while other
//! tenants proceed. The `(tenant, seq)` primary key refuses a fork even if that were bypassed.
//!
//! A plain append ([`AuditLog::append`]) commits asynchronously where the dialect can and
//! answers after [`Dialect::flush`]: the chain's lock is held until the commit, not until the
//! disk has the commit, so appends of one chain from several replicas do not queue behind each
//! other's fsync. Reads that hand events out flush after reading (see `postgres.rs`).
//!
//! Every field the hash covers is its own column and events are rebuilt from those columns
//! alone, so an edit to any stored field breaks `verify_chain` at that row. `at` is stored as
//! unix nanoseconds plus its UTC offset, because the hash covers its RFC 3339 text. How a batch
//! is inserted is the dialect's ([`Dialect::insert_events`]).

use std::collections::HashMap;

use async_trait::async_trait;
use bridle_core::audit::head::ChainHead;
use bridle_core::audit::{AuditEvent, AuditRecord};
use bridle_core::ports::{AuditLog, StoreResult};
use time::OffsetDateTime;

use super::{Dialect, Done, Lock, SqlStore, TxKind, args, job};
use crate::audit::Prepared;
use crate::store::rows::{self, Columns, enum_name, to_i64, to_nanos, to_u64};

/// Stored columns, in insert order.
pub(crate) const COLUMNS: &str = "tenant, seq, kind, call_id, at, at_offset, subject, run_id, incident, tool, \
     policy_version, plan_hash, executor_identity, approval_id, approver, decision, code, reason, total_us, \
     policy_us, adapter_us, prev_hash, hash, evidence_digest, agent_id, model, prompt_hash, tool_schema_hash, agent_source, \
     auth";
/// How many columns [`COLUMNS`] names.
pub(crate) const WIDTH: usize = 30;
/// The tenants of the log, by a skip-scan over the primary key: one index probe per tenant, not
/// one per event.
const TENANTS: &str = "WITH RECURSIVE t(tenant) AS (
         SELECT MIN(tenant) FROM audit_events
         UNION ALL
         SELECT (SELECT MIN(tenant) FROM audit_events WHERE tenant > t.tenant) FROM t
         WHERE t.tenant IS NOT NULL
     )";
/// Events whose evidence one prune transaction drops.
const PRUNE_PAGE: i64 = 1000;

/// An event's values for the columns that are not the record's own text, converted once for
/// either dialect's insert.
pub(crate) struct Stored<'a> {
    pub(crate) event: &'a AuditEvent,
    pub(crate) seq: i64,
    pub(crate) kind: &'static str,
    pub(crate) at: i64,
    pub(crate) at_offset: i64,
    pub(crate) decision: Option<String>,
    pub(crate) total_us: i64,
    pub(crate) policy_us: i64,
    pub(crate) adapter_us: i64,
    pub(crate) agent_source: Option<&'static str>,
    pub(crate) auth: Option<&'static str>,
}

impl<'a> Stored<'a> {
    pub(crate) fn new(event: &'a AuditEvent) -> StoreResult<Self> {
        let r = &event.record;
        // Messages are built only on failure: this runs for every appended event.
        let what = |field: &str| format!("audit event {} of `{}` {field}", event.seq, r.tenant);
        let int = |field: &str, v: u64| i64::try_from(v).map_or_else(|_| to_i64(what(field), v), Ok);
        Ok(Self {
            event,
            seq: int("seq", event.seq)?,
            kind: r.kind.as_str(),
            at: i64::try_from(r.at.unix_timestamp_nanos()).map_or_else(|_| to_nanos(what("at"), r.at), Ok)?,
            at_offset: i64::from(r.at.offset().whole_seconds()),
            decision: r.decision.map(|d| enum_name("audit decision", d)).transpose()?,
            total_us: int("total_us", r.timings.total_us)?,
            policy_us: int("policy_us", r.timings.policy_us)?,
            adapter_us: int("adapter_us", r.timings.adapter_us)?,
            agent_source: r.versions.agent_source.map(bridle_core::agents::AgentSource::as_str),
            auth: r.auth.map(bridle_core::audit::OperatorAuth::as_str),
        })
    }
}

/// The last (seq, hash) of a tenant's chain, read after its lock is held.
async fn head<D: Dialect>(conn: &mut D::Conn, tenant: &str) -> StoreResult<Option<(u64, String)>> {
    let sql = "SELECT seq, hash FROM audit_events WHERE tenant = $1 ORDER BY seq DESC LIMIT 1";
    let Some(row) = D::fetch_optional(conn, sql, args![tenant]).await? else { return Ok(None) };
    Ok(Some((to_u64(format_args!("audit seq of `{tenant}`"), row.int("seq")?)?, row.text("hash")?)))
}

/// Locks the chains of `records`' tenants (in sorted order), chains the records after their
/// heads (masked by [`crate::audit::prepare`], as in every store) and inserts them through `conn`,
/// which must be inside a write transaction: the append of every state change that carries its
/// audit records.
///
/// INVARIANT (lock order): a transaction takes the audit locks LAST, after every row it
/// changes, and takes no other lock while it holds them; so a holder of a tenant's audit lock
/// never waits for a row another transaction holds, and state changes cannot deadlock with
/// appends or with each other.
pub(super) async fn append_in<D: Dialect>(
    conn: &mut D::Conn,
    records: Vec<AuditRecord>,
) -> StoreResult<Vec<AuditEvent>> {
    append_prepared::<D>(conn, crate::audit::prepare(records)?).await
}

/// [`append_in`] of records already prepared: what a writer does while the chain is locked.
async fn append_prepared<D: Dialect>(conn: &mut D::Conn, prepared: Prepared) -> StoreResult<Vec<AuditEvent>> {
    if prepared.is_empty() {
        return Ok(Vec::new());
    }
    let tenants = prepared.tenants();
    let mut heads = HashMap::with_capacity(tenants.len());
    for tenant in tenants {
        D::lock(conn, Lock::Chain(tenant)).await?;
        let head = match D::known_head(conn, tenant) {
            Some(known) => known,
            None => head::<D>(conn, tenant).await?,
        };
        heads.insert(tenant.to_owned(), head);
    }
    let events = crate::audit::chain(prepared, &mut heads);
    D::insert_events(conn, &events).await?;
    for (tenant, head) in &heads {
        D::note_head(conn, tenant, head.as_ref().map(|(seq, hash)| (*seq, hash.as_str())));
    }
    Ok(events)
}

#[async_trait]
impl<D: Dialect> AuditLog for SqlStore<D> {
    async fn append(&self, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        // Masking and the hashed bytes are the caller's work, not the writer's.
        let prepared = crate::audit::prepare(records)?;
        let append = job::<D, _, _>(move |conn| {
            Box::pin(async move { append_prepared::<D>(conn, prepared).await.map(Done::kept) })
        });
        let events = self.db().transact(TxKind::AsyncKept, append).await?;
        self.db().flush().await?;
        Ok(events)
    }

    async fn tenants(&self) -> StoreResult<Vec<String>> {
        let sql = format!("{TENANTS} SELECT tenant FROM t WHERE tenant IS NOT NULL");
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, &sql, &[]).await?;
        rows.iter().map(|r| r.text("tenant")).collect()
    }

    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>> {
        // Past the largest storable seq there is nothing to return.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let sql = format!("SELECT {COLUMNS} FROM audit_events WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3");
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, &sql, args![tenant, after, i64::from(limit)]).await?;
        drop(conn);
        // What leaves the store must survive a crash (see `postgres.rs`).
        self.db().flush().await?;
        rows.iter().map(rows::audit_event).collect()
    }

    async fn prune_evidence(&self, before: OffsetDateTime) -> StoreResult<u64> {
        // A cut-off past the storable range means "everything" (or nothing, before it).
        let far = if before > OffsetDateTime::UNIX_EPOCH { i64::MAX } else { i64::MIN };
        let before = i64::try_from(before.unix_timestamp_nanos()).unwrap_or(far);
        let mut pruned = 0;
        // Short transactions, so appends wait for one page at a time, never for the whole prune.
        loop {
            let mut tx = self.db().begin().await?;
            let done = D::execute(
                &mut tx,
                "UPDATE audit_events SET reason = NULL WHERE (tenant, seq) IN (
                     SELECT tenant, seq FROM audit_events
                     WHERE reason IS NOT NULL AND evidence_digest IS NOT NULL AND at < $1 LIMIT $2)",
                args![before, PRUNE_PAGE],
            )
            .await?;
            D::commit(tx).await?;
            pruned += done;
            if done < PRUNE_PAGE.unsigned_abs() {
                return Ok(pruned);
            }
        }
    }

    async fn heads(&self) -> StoreResult<Vec<ChainHead>> {
        // The last (seq, hash) of every tenant's chain: one index probe each for its last event.
        let sql = format!(
            "{TENANTS} SELECT e.tenant, e.seq, e.hash FROM t
             JOIN audit_events e ON e.tenant = t.tenant
                 AND e.seq = (SELECT MAX(seq) FROM audit_events WHERE tenant = t.tenant)"
        );
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, &sql, &[]).await?;
        drop(conn);
        // A signed head must never name an event a crash could lose.
        self.db().flush().await?;
        rows.iter()
            .map(|r| {
                let tenant = r.text("tenant")?;
                let seq = to_u64(format_args!("audit seq of `{tenant}`"), r.int("seq")?)?;
                Ok(ChainHead { tenant, seq, hash: r.text("hash")? })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_has_width_names() {
        assert_eq!(COLUMNS.split(", ").count(), WIDTH);
    }
}
