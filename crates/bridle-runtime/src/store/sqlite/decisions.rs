//! Decision records over SQLite: one row per LLM call, listed newest first.
//!
//! Ties on `created_at` keep insertion order (the `n` row number), as the memory store does.

use async_trait::async_trait;
use bridle_core::decision::DecisionRecord;
use bridle_core::ports::{DecisionLog, StoreError, StoreResult};
use sqlx::sqlite::SqliteRow;

use super::{SqliteStore, db_err, is_unique_violation, to_i64, to_json, to_nanos};

fn decode(row: &SqliteRow) -> StoreResult<DecisionRecord> {
    crate::store::rows::decision(row)
}

#[async_trait]
impl DecisionLog for SqliteStore {
    async fn record(&self, d: &DecisionRecord) -> StoreResult<()> {
        let what = |field: &str| format!("decision `{}` {field}", d.decision_id);
        let inserted = sqlx::query(
            "INSERT INTO decisions (decision_id, pipeline_run_id, tenant, agent, model, input, output,
                 prompt_tokens, completion_tokens, latency_ms, harness_checks, final_verdict, created_at,
                 prompt_hash, tool_schema_hash, policy_version)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        .bind(&d.prompt_hash)
        .bind(&d.tool_schema_hash)
        .bind(&d.policy_version)
        .execute(&self.writer)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(StoreError::Duplicate(format!("decision `{}`", d.decision_id))),
            Err(e) => Err(db_err(e)),
        }
    }

    async fn recent(&self, tenant: &str, limit: u32) -> StoreResult<Vec<DecisionRecord>> {
        let rows = sqlx::query(
            "SELECT decision_id, pipeline_run_id, tenant, agent, model, input, output, prompt_tokens,
                 completion_tokens, latency_ms, harness_checks, final_verdict, created_at, prompt_hash,
                 tool_schema_hash, policy_version
             FROM decisions WHERE tenant = ? ORDER BY created_at DESC, n LIMIT ?",
        )
        .bind(tenant)
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)?;
        rows.iter().map(decode).collect()
    }
}
