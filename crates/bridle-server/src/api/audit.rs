//! `GET /v1/audit`: the audit events of the caller's tenant, in chain order, a page at a time,
//! optionally within a time window (`since`, `until`). The tenant is the token's; no parameter
//! can name another.

use axum::Json;
use axum::extract::{Query, State};
use bridle_core::approval::SCOPE_GRANT;
use bridle_core::audit::siem::Window;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Caller;
use crate::AppState;
use crate::error::ApiError;

/// Scope for reading the audit log (approvers may read it too).
pub const SCOPE_AUDIT_READ: &str = "audit:read";
/// Page size when none is asked for.
const DEFAULT_LIMIT: u32 = 100;
/// Largest page.
const MAX_LIMIT: u32 = 1000;

/// Query of `GET /v1/audit`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Events after this sequence number (default 0: from the start); sequence numbers are
    /// stored as signed 64-bit integers, so at most `i64::MAX`.
    #[param(minimum = 0, maximum = 9_223_372_036_854_775_807_i64)]
    pub after: Option<u64>,
    /// Page size, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Only events at or after this time (RFC 3339; YYYY-MM-DD, UTC midnight, is also read).
    #[param(format = DateTime, example = "2026-12-01T00:00:00Z")]
    pub since: Option<String>,
    /// Only events before this time (RFC 3339; YYYY-MM-DD is also read).
    #[param(format = DateTime, example = "2026-12-02T00:00:00Z")]
    pub until: Option<String>,
}

/// One page of the caller's tenant's audit events.
#[utoipa::path(
    get, path = "/v1/audit", operation_id = "listAuditEvents", tag = "audit",
    params(AuditQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"events\": [AuditEvent], \"next_after\": seq | null}`; pass `next_after` as `after` for the next page (with `since` / `until`, a page holds the events of the window among the next `limit` of the chain, so it may be short or empty while `next_after` is set). Each event keeps its `seq`, `hash` and `prev_hash`, so a receiver can check the chain. Each event carries `display`, what it means to an operator (`executed`, `waiting for approval`, `refused: policy_denied` …); `decision` and `code` stay as stored.", body = crate::openapi::AuditPage),
        (status = 400, description = "bad query (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `audit:read` or `approval:grant` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.require_any(&[SCOPE_AUDIT_READ, SCOPE_GRANT])?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let after = query.after.unwrap_or(0);
    if i64::try_from(after).is_err() {
        return Err(ApiError::bad_request(format!("`after` must be at most {}", i64::MAX)));
    }
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_LIMIT}")));
    }
    let time = |name: &str, text: &Option<String>| match text.as_deref() {
        None => Ok(None),
        Some(t) => Window::parse_time(t)
            .map(Some)
            .ok_or_else(|| ApiError::bad_request(format!("`{name}` must be RFC 3339 or YYYY-MM-DD"))),
    };
    let window = Window { since: time("since", &query.since)?, until: time("until", &query.until)? };
    let events = state.gate.stores().audit.events(&caller.0.tenant, after, limit).await?;
    let next_after = (events.len() == limit as usize).then(|| events.last().map(|e| e.seq)).flatten();
    // Each event as stored, with what it means to an operator beside it (`display`).
    let mut shown = Vec::with_capacity(events.len());
    for event in events.iter().filter(|e| window.holds(e)) {
        let mut value = serde_json::to_value(event)?;
        if let Value::Object(fields) = &mut value {
            fields.insert("display".to_owned(), Value::String(event.record.display()));
        }
        shown.push(value);
    }
    Ok(Json(json!({"events": shown, "next_after": next_after})))
}

/// `GET /v1/audit/verify`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ChainStatus {
    /// The caller's tenant.
    pub tenant: String,
    /// True when every event links to the one before it, its hash matches its content, and no
    /// signed head disagrees with the stored chain (an unanchored tail is still `ok`).
    pub ok: bool,
    /// Events verified before the first broken link (all of them when the links are intact).
    pub verified: u64,
    /// The first broken link `{tenant, seq, problem}`, null when the links are intact.
    #[schema(value_type = Option<Object>, required = true)]
    pub broken: Option<bridle_core::audit::BrokenLink>,
    /// The chain against the signed heads of the head log.
    pub tail: TailStatus,
}

/// The caller's chain against its signed heads.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct TailStatus {
    /// `anchored` (every signed head matches), `missing` (a signed head names events the store no
    /// longer holds: the tail was deleted), `rewritten` (a stored event differs from the signed
    /// head at its seq), `untrusted` (a head line of this tenant, or one naming none, is not a
    /// head or its signature does not verify), `unreadable` (the head log could not be read),
    /// or `unanchored` (no heads: no key, no head log, or none written yet; `note` says which).
    #[schema(example = "anchored")]
    pub status: String,
    /// Why the tail is unanchored or the check failed, in words.
    pub note: Option<String>,
    /// The last stored seq (0: no events).
    pub events: u64,
    /// The seq of the newest signed head, null without one.
    pub anchored_seq: Option<u64>,
    /// When that head was signed (RFC 3339).
    pub anchored_at: Option<String>,
    /// Stored events after the newest signed head (not yet anchored).
    pub unanchored: u64,
    /// The deleted tail: events `from` to `to` are gone.
    pub missing: Option<MissingTail>,
    /// The first signed seq whose stored event differs.
    pub rewritten: Option<RewrittenAt>,
    /// Head log lines for this tenant (or naming none) that are not trusted.
    pub untrusted_lines: u64,
}

/// Events a signed head proves existed and the store no longer holds.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct MissingTail {
    /// First missing seq.
    pub from: u64,
    /// Last missing seq (the newest signed head's).
    pub to: u64,
    /// When that head was signed.
    pub signed_at: String,
}

/// A signed seq whose stored event does not match its head.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RewrittenAt {
    /// The seq.
    pub seq: u64,
    /// When the head naming it was signed.
    pub signed_at: String,
    /// What is wrong.
    pub problem: String,
}

impl TailStatus {
    fn unanchored(status: &str, note: String, events: u64) -> Self {
        Self {
            status: status.to_owned(),
            note: Some(note),
            events,
            anchored_seq: None,
            anchored_at: None,
            unanchored: events,
            missing: None,
            rewritten: None,
            untrusted_lines: 0,
        }
    }

    fn ok(&self) -> bool {
        matches!(self.status.as_str(), "anchored" | "unanchored")
    }
}

/// Verifies the hash chain of the caller's tenant's audit log from its first event, and checks it
/// against the signed heads of the head log (a deleted tail is named).
#[utoipa::path(
    get, path = "/v1/audit/verify", operation_id = "verifyAudit", tag = "audit",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the chain's status; a broken chain, a deleted or rewritten tail, an untrusted head line or an unreadable head log is a 200 with `ok: false`", body = ChainStatus),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `audit:read` or `approval:grant` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn verify(State(state): State<AppState>, caller: Caller) -> Result<Json<ChainStatus>, ApiError> {
    caller.require_any(&[SCOPE_AUDIT_READ, SCOPE_GRANT])?;
    let tenant = caller.0.tenant.clone();
    let stores = state.gate.stores();
    let source = stores.anchoring.source();
    // Only the caller's heads are read (a line naming another tenant is skipped unread).
    let heads = bridle_runtime::audit::heads_status(source.as_ref().map_err(|w| *w), Some(&tenant)).await;
    let (heads, anchors) = match heads {
        Ok((status, anchors)) => (Ok(status), anchors),
        Err(e @ bridle_runtime::audit::VerifyError::Store(_)) => return Err(e.into()),
        Err(e) => (Err(e.to_string()), None),
    };
    let check = bridle_runtime::audit::check_tenant(stores.audit.as_ref(), &tenant, anchors.as_ref()).await?;
    let events = check.tail.as_ref().map_or(check.verified, |t| t.events);
    let tail = match (heads, check.tail) {
        (Err(e), _) => TailStatus::unanchored("unreadable", e, events),
        (Ok(h), None) => TailStatus::unanchored("unanchored", h.note.unwrap_or_default(), events),
        (Ok(h), Some(t)) => {
            let untrusted = u64::try_from(h.problems.len()).unwrap_or(u64::MAX);
            let status = if t.rewritten.is_some() {
                "rewritten"
            } else if t.missing.is_some() {
                "missing"
            } else if untrusted > 0 {
                "untrusted"
            } else if t.anchor.is_some() {
                "anchored"
            } else {
                "unanchored"
            };
            let note = match status {
                "anchored" | "unanchored" if untrusted == 0 => {
                    (t.anchor.is_none() || t.unanchored > 0).then(|| t.describe())
                }
                "untrusted" => Some(format!(
                    "{untrusted} head line(s) not trusted: {}",
                    h.problems.iter().map(|p| format!("line {}: {}", p.line, p.problem)).collect::<Vec<_>>().join("; ")
                )),
                _ => Some(t.describe()),
            };
            TailStatus {
                status: status.to_owned(),
                note,
                events: t.events,
                anchored_seq: t.anchor.as_ref().map(|a| a.seq),
                anchored_at: t.anchor.as_ref().map(|a| a.at.clone()),
                unanchored: t.unanchored,
                missing: t.missing.map(|m| MissingTail { from: m.from, to: m.to, signed_at: m.signed_at }),
                rewritten: t.rewritten.map(|r| RewrittenAt { seq: r.seq, signed_at: r.signed_at, problem: r.problem }),
                untrusted_lines: untrusted,
            }
        }
    };
    let ok = check.broken.is_none() && tail.ok();
    Ok(Json(ChainStatus { tenant, ok, verified: check.verified, broken: check.broken, tail }))
}
