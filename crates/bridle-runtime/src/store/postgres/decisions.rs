//! Decision records over PostgreSQL: one row per LLM call, listed newest first.
//!
//! Ties on `created_at` keep insertion order (the identity column `n`), as the memory store does.

use async_trait::async_trait;
use bridle_core::decision::DecisionRecord;
use bridle_core::ports::{DecisionLog, StoreError, StoreResult};
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::{PostgresStore, db_err, from_json, from_nanos, to_i64, to_json, to_nanos, to_u64, violates};

fn decode(row: &PgRow) -> StoreResult<DecisionRecord> {
    let id: String = row.try_get("decision_id").map_err(db_err)?;
    let what = |field: &str| format!("decision `{id}` {field}");
    let json = |field: &str| -> StoreResult<serde_json::Value> {
        from_json(&what(field), &row.try_get::<String, _>(field).map_err(db_err)?)
    };
    let count = |field: &str| -> StoreResult<u64> { to_u64(&what(field), row.try_get(field).map_err(db_err)?) };
    Ok(DecisionRecord {
        pipeline_run_id: row.try_get("pipeline_run_id").map_err(db_err)?,
        tenant: row.try_get("tenant").map_err(db_err)?,
        agent: row.try_get("agent").map_err(db_err)?,
        model: row.try_get("model").map_err(db_err)?,
        input: json("input")?,
        output: json("output")?,
        prompt_tokens: count("prompt_tokens")?,
        completion_tokens: count("completion_tokens")?,
        latency_ms: count("latency_ms")?,
        harness_checks: json("harness_checks")?,
        final_verdict: row.try_get("final_verdict").map_err(db_err)?,
        created_at: from_nanos(&what("created_at"), row.try_get("created_at").map_err(db_err)?)?,
        decision_id: id,
    })
}

#[async_trait]
impl DecisionLog for PostgresStore {
    async fn record(&self, d: &DecisionRecord) -> StoreResult<()> {
        let what = |field: &str| format!("decision `{}` {field}", d.decision_id);
        let inserted = sqlx::query(
            "INSERT INTO decisions (decision_id, pipeline_run_id, tenant, agent, model, input, output,
                 prompt_tokens, completion_tokens, latency_ms, harness_checks, final_verdict, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(&d.decision_id)
        .bind(&d.pipeline_run_id)
        .bind(&d.tenant)
        .bind(&d.agent)
        .bind(&d.model)
        .bind(to_json(&what("input"), &d.input)?)
        .bind(to_json(&what("output"), &d.output)?)
        .bind(to_i64(&what("prompt_tokens"), d.prompt_tokens)?)
        .bind(to_i64(&what("completion_tokens"), d.completion_tokens)?)
        .bind(to_i64(&what("latency_ms"), d.latency_ms)?)
        .bind(to_json(&what("harness_checks"), &d.harness_checks)?)
        .bind(&d.final_verdict)
        .bind(to_nanos(&what("created_at"), d.created_at)?)
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if violates(&e, "decisions_decision_id_key") => {
                Err(StoreError::Duplicate(format!("decision `{}`", d.decision_id)))
            }
            Err(e) => Err(db_err(e)),
        }
    }

    async fn recent(&self, tenant: &str, limit: u32) -> StoreResult<Vec<DecisionRecord>> {
        let rows = sqlx::query(
            "SELECT decision_id, pipeline_run_id, tenant, agent, model, input, output, prompt_tokens,
                 completion_tokens, latency_ms, harness_checks, final_verdict, created_at
             FROM decisions WHERE tenant = $1 ORDER BY created_at DESC, n LIMIT $2",
        )
        .bind(tenant)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(decode).collect()
    }
}
