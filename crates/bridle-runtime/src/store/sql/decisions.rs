//! Decision records: one row per LLM call, listed newest first.
//!
//! Ties on `created_at` keep insertion order (the row number `n`), as the memory store does.

use async_trait::async_trait;
use bridle_core::decision::DecisionRecord;
use bridle_core::ports::{DecisionLog, StoreError, StoreResult};

use super::{Dialect, SqlStore, args};
use crate::store::rows::{self, to_i64, to_json, to_nanos};

#[async_trait]
impl<D: Dialect> DecisionLog for SqlStore<D> {
    async fn record(&self, d: &DecisionRecord) -> StoreResult<()> {
        let what = |field: &str| format!("decision `{}` {field}", d.decision_id);
        let (input, output) = (to_json(&what("input"), &d.input)?, to_json(&what("output"), &d.output)?);
        let checks = to_json(&what("harness_checks"), &d.harness_checks)?;
        let mut conn = self.db().write().await?;
        let inserted = D::insert(
            &mut conn,
            "INSERT INTO decisions (decision_id, pipeline_run_id, tenant, agent, model, input, output,
                 prompt_tokens, completion_tokens, latency_ms, harness_checks, final_verdict, created_at,
                 prompt_hash, tool_schema_hash, policy_version)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
            args![
                &d.decision_id,
                &d.pipeline_run_id,
                &d.tenant,
                &d.agent,
                &d.model,
                &input,
                &output,
                to_i64(what("prompt_tokens"), d.prompt_tokens)?,
                to_i64(what("completion_tokens"), d.completion_tokens)?,
                to_i64(what("latency_ms"), d.latency_ms)?,
                &checks,
                &d.final_verdict,
                to_nanos(what("created_at"), d.created_at)?,
                &d.prompt_hash,
                &d.tool_schema_hash,
                &d.policy_version,
            ],
            "decisions_decision_id_key",
        )
        .await?;
        if inserted.is_some() { Ok(()) } else { Err(StoreError::Duplicate(format!("decision `{}`", d.decision_id))) }
    }

    async fn recent(&self, tenant: &str, limit: u32) -> StoreResult<Vec<DecisionRecord>> {
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(
            &mut conn,
            "SELECT decision_id, pipeline_run_id, tenant, agent, model, input, output, prompt_tokens,
                 completion_tokens, latency_ms, harness_checks, final_verdict, created_at, prompt_hash,
                 tool_schema_hash, policy_version
             FROM decisions WHERE tenant = $1 ORDER BY created_at DESC, n LIMIT $2",
            args![tenant, i64::from(limit)],
        )
        .await?;
        rows.iter().map(rows::decision).collect()
    }
}
