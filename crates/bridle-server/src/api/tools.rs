//! `GET /v1/tools`: the tools the caller's scopes expose, in MCP `tools/list` form (or OpenAI
//! function form with `?format=openai`). Exposure is a convenience; every call is still gated.

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Caller;
use crate::AppState;
use crate::error::ApiError;

/// Query of `GET /v1/tools`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ToolsQuery {
    /// `mcp` (default) or `openai`.
    #[param(inline)]
    pub format: Option<ToolsFormat>,
}

/// The form tools are listed in.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolsFormat {
    /// MCP `tools/list` form.
    Mcp,
    /// OpenAI function form.
    Openai,
}

/// The caller's exposed tools.
#[utoipa::path(
    get, path = "/v1/tools", operation_id = "listTools", tag = "tools",
    params(ToolsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"tools\": [...]}`: the tools the caller's scopes expose", body = crate::openapi::ToolList),
        (status = 400, description = "unknown format (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(caller): Caller,
    query: Result<Query<ToolsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let config = state.gate.config();
    let tools = match query.format {
        None | Some(ToolsFormat::Mcp) => config.registry.mcp_tools(&caller, &config.agents),
        Some(ToolsFormat::Openai) => config.registry.openai_tools(&caller, &config.agents),
    };
    Ok(Json(json!({ "tools": tools })))
}
