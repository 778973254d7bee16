//! `bridle approvals list|approve|reject`: the approvals desk from a terminal, working directly
//! on the store as a named principal of the configuration. Argument handling and printing only:
//! grants and rejections go through the desk (`bridle_runtime::approvals`), so approver ≠
//! requester, the approval scopes, the service and the expiry are checked as over the API, and
//! every act is audited.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bridle_core::Principal;
use bridle_core::approval::ApprovalRequest;
use bridle_runtime::approvals::ApprovalError;
use bridle_runtime::gate::Gate;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

use super::out;

/// Characters of the arguments shown in the text listing.
const ARGS_SHOWN: usize = 48;
/// Hex digits of the plan hash shown in the text listing.
const HASH_SHOWN: usize = 12;

/// What the three subcommands share.
#[derive(Debug, Clone, Copy)]
pub struct Desk<'a> {
    /// `--config`.
    pub config: Option<&'a Path>,
    /// `--db`.
    pub db: Option<&'a str>,
    /// `--as`: a principal named in the configuration.
    pub acting_as: &'a str,
    /// `--json`.
    pub json: bool,
}

impl Desk<'_> {
    async fn open(&self) -> anyhow::Result<(Gate, Principal)> {
        let config = Arc::new(super::config(self.config)?);
        let principal = config.principals.get(self.acting_as).cloned().with_context(|| {
            let names: Vec<&str> = config.principals.keys().map(String::as_str).collect();
            format!("no principal `{}` in the configuration (known: {})", self.acting_as, names.join(", "))
        })?;
        let stores = super::stores(&config, self.db).await?;
        let gate = bridle_runtime::check::gate(config, stores).context("building the gate")?;
        Ok((gate, principal))
    }
}

/// Lists the pending requests of the principal's tenant.
pub async fn list(desk: &Desk<'_>) -> anyhow::Result<ExitCode> {
    let (gate, principal) = desk.open().await?;
    let pending = gate.pending_approvals(&principal).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    if desk.json {
        for r in &pending {
            out::line(&view(r).to_string())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if pending.is_empty() {
        out::line(&format!("no pending approvals for tenant `{}`", principal.tenant))?;
        return Ok(ExitCode::SUCCESS);
    }
    out::line("ID\tTOOL\tARGUMENTS\tPLAN\tREQUESTER\tLEVEL\tEXPIRES")?;
    for r in &pending {
        let args = bridle_core::verdict::clip(&r.plan.arguments.to_string(), ARGS_SHOWN);
        let hash = r.plan_hash.0.get(..HASH_SHOWN).unwrap_or(&r.plan_hash.0);
        out::line(&format!(
            "{}\t{}\t{args}\t{hash}\t{}\t{}\t{}",
            r.id,
            r.plan.tool,
            r.requester,
            r.level.as_str(),
            rfc3339(r.expires_at)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Adds the principal's grant to request `id`.
pub async fn approve(desk: &Desk<'_>, id: &str) -> anyhow::Result<ExitCode> {
    let (gate, principal) = desk.open().await?;
    let result = gate.grant(&principal, id).await;
    report(desk, "approve", result)
}

/// Rejects pending request `id` with `reason`.
pub async fn reject(desk: &Desk<'_>, id: &str, reason: &str) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(!reason.trim().is_empty(), "--reason must not be empty");
    let (gate, principal) = desk.open().await?;
    let result = gate.reject(&principal, id, reason).await;
    report(desk, "reject", result)
}

/// Prints the request after the act, or the refusal (exit 1).
fn report(desk: &Desk<'_>, act: &str, result: Result<ApprovalRequest, ApprovalError>) -> anyhow::Result<ExitCode> {
    match result {
        Ok(r) => {
            if desk.json {
                out::line(&view(&r).to_string())?;
            } else {
                let approvers = r.grants.iter().map(|g| g.approver.as_str()).collect::<Vec<_>>().join(", ");
                out::line(&format!(
                    "approval `{}` ({} of `{}`): {} (level {}; grants: {})",
                    r.id,
                    act,
                    r.plan.tool,
                    r.status.as_str(),
                    r.level.as_str(),
                    if approvers.is_empty() { "none" } else { &approvers }
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ApprovalError::Refused(rejection)) => {
            if desk.json {
                out::line(
                    &json!({"status": "refused", "code": rejection.code.as_str(), "message": rejection.message})
                        .to_string(),
                )?;
            } else {
                eprintln!("refused: {}: {}", rejection.code.as_str(), rejection.message);
            }
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// One request as a JSON line: the full plan hash and arguments.
fn view(r: &ApprovalRequest) -> Value {
    json!({
        "approval_id": r.id,
        "tenant": r.tenant,
        "tool": r.plan.tool,
        "arguments": r.plan.arguments,
        "plan_hash": r.plan_hash.0,
        "requester": r.requester,
        "level": r.level.as_str(),
        "status": r.status.as_str(),
        "grants": r.grants.iter().map(|g| g.approver.as_str()).collect::<Vec<_>>(),
        "rejection_reason": r.rejection_reason,
        "created_at": rfc3339(r.created_at),
        "expires_at": rfc3339(r.expires_at),
        "context": r.context,
    })
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}
