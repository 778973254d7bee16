//! `bridle approvals list|approve|reject`: the approvals desk from a terminal, working directly
//! on the store as an authenticated operator. Argument handling and printing only: grants and
//! rejections go through the desk (`bridle_runtime::approvals`), so approver ≠ requester, the
//! approval scopes, the service and the expiry are checked as over the API, and every act is
//! audited with the way the operator authenticated (`auth`: `token` or `as`).
//!
//! Who acts: the principal of `--token` / `BRIDLE_TOKEN`, verified exactly as `bridle serve`
//! verifies bearer tokens (`bridle_server::auth`, the same `BRIDLE_JWT_*` settings). `--as P`
//! (a principal named in the configuration, no credential) is the embedded, single-machine case:
//! accepted on `sqlite://` and `memory` stores, refused on `postgres://` (a database several
//! servers and people share) for every subcommand.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bridle_core::Principal;
use bridle_core::approval::{ApprovalRequest, SCOPE_GRANT, SCOPE_SIGN_OFF};
use bridle_core::audit::OperatorAuth;
use bridle_runtime::approvals::ApprovalDesk;
use bridle_runtime::approvals::ApprovalError;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

use super::out;

/// Characters of the arguments shown in the text listing.
const ARGS_SHOWN: usize = 48;
/// Hex digits of the plan hash shown in the text listing.
const HASH_SHOWN: usize = 12;

/// How the operator says who they are.
#[derive(Debug, Clone, clap::Args)]
pub struct Credential {
    /// The operator's token (default: BRIDLE_TOKEN), verified as `bridle serve` verifies tokens
    /// (same BRIDLE_JWT_* settings): acts as the token's subject in its tenant.
    #[arg(long, conflicts_with = "acting_as")]
    pub token: Option<String>,
    /// Act as a principal of the configuration without a credential: only on a `sqlite://` or
    /// `memory` store (one machine); refused on `postgres://`.
    #[arg(long = "as", value_name = "PRINCIPAL")]
    pub acting_as: Option<String>,
}

/// `bridle approvals …`.
#[derive(Debug, clap::Subcommand)]
pub enum ApprovalsCommand {
    /// Pending requests of the operator's tenant (id, tool, arguments, plan hash prefix,
    /// requester, level, expiry); `--json` prints one JSON line each.
    List {
        #[command(flatten)]
        who: Credential,
    },
    /// Add the operator's grant to a pending request.
    Approve {
        #[command(flatten)]
        who: Credential,
        /// Approval id.
        id: String,
    },
    /// Reject a pending request.
    Reject {
        #[command(flatten)]
        who: Credential,
        /// Approval id.
        id: String,
        /// Why (recorded with the rejection and in the audit log).
        #[arg(long)]
        reason: String,
    },
}

/// What the three subcommands share.
#[derive(Debug, Clone, Copy)]
pub struct Desk<'a> {
    /// `--config`.
    pub config: Option<&'a Path>,
    /// `--db`.
    pub db: Option<&'a str>,
    /// `--token` / `--as`.
    pub who: &'a Credential,
    /// `--json`.
    pub json: bool,
}

/// An operator who may not act: printed as `refused: CODE: message`, exit 1.
pub(super) struct Refusal {
    /// Stable code.
    pub code: &'static str,
    /// Why.
    pub message: String,
}

/// Runs one subcommand.
pub async fn run(
    command: &ApprovalsCommand,
    config: Option<&Path>,
    db: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match command {
        ApprovalsCommand::List { who } => list(&Desk { config, db, who, json }).await,
        ApprovalsCommand::Approve { who, id } => approve(&Desk { config, db, who, json }, id).await,
        ApprovalsCommand::Reject { who, id, reason } => reject(&Desk { config, db, who, json }, id, reason).await,
    }
}

impl Desk<'_> {
    /// The approval desk over the store and the authenticated operator, or why they may not act.
    async fn open(&self) -> anyhow::Result<Result<(ApprovalDesk, Principal, OperatorAuth), Refusal>> {
        let config = Arc::new(super::config(self.config)?);
        let url = super::store_url(&config, self.db);
        let (principal, auth) = match authenticate(&config, &url, self.who, "bridle approvals").await? {
            Ok(who) => who,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let stores = super::stores(&config, Some(&url)).await?;
        let desk = bridle_runtime::check::engine(config, stores, super::tools()).context("building the gate")?.desk;
        Ok(Ok((desk, principal, auth)))
    }

    /// Prints a refusal; exit 1.
    fn refuse(&self, r: &Refusal) -> anyhow::Result<ExitCode> {
        if self.json {
            out::line(&json!({"status": "refused", "code": r.code, "message": r.message}).to_string())?;
        } else {
            eprintln!("refused: {}: {}", r.code, r.message);
        }
        Ok(ExitCode::FAILURE)
    }
}

/// The operator `who` names on the store at `url`: the verified principal of `--token` /
/// BRIDLE_TOKEN, or `--as P` (a principal of `config`, only on a sqlite:// or memory store), or
/// why they may not act. `command` names the command in messages.
pub(super) async fn authenticate(
    config: &bridle_core::config::Config,
    url: &str,
    who: &Credential,
    command: &str,
) -> anyhow::Result<Result<(Principal, OperatorAuth), Refusal>> {
    match (&who.acting_as, &who.token) {
        (Some(_), _) if is_shared(url) => Ok(Err(Refusal {
            code: "unauthenticated",
            message: "`--as` acts without a credential and is refused on a postgres:// store, which several servers \
                      and people share: authenticate with `--token T` or BRIDLE_TOKEN (see `bridle token issue`)"
                .to_owned(),
        })),
        (Some(name), _) => {
            let principal = config.principals.get(name).cloned().with_context(|| {
                let names: Vec<&str> = config.principals.keys().map(String::as_str).collect();
                format!("no principal `{name}` in the configuration (known: {})", names.join(", "))
            })?;
            Ok(Ok((principal, OperatorAuth::As)))
        }
        (None, token) => {
            let env = std::env::var("BRIDLE_TOKEN").ok().filter(|t| !t.trim().is_empty());
            let Some(token) = token.clone().or(env) else {
                anyhow::bail!(
                    "`{command}` needs the operator's credential: `--token T` or BRIDLE_TOKEN (see `bridle token \
                     issue`); `--as P` only on a sqlite:// or memory store"
                );
            };
            let auth = bridle_server::auth::AuthConfig::from_env()
                .context("cannot verify tokens")?
                .with_settings(&config.auth);
            let verifier = bridle_server::auth::Verifier::new(&auth).context("cannot verify tokens")?;
            verifier.refresh().await.context("cannot read the token keys")?;
            match verifier.verify(token.trim()) {
                Ok(principal) => Ok(Ok((principal, OperatorAuth::Token))),
                Err(e) => Ok(Err(Refusal { code: "unauthenticated", message: e.to_string() })),
            }
        }
    }
}

/// A store several processes and people share: PostgreSQL.
fn is_shared(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Lists the pending requests of the principal's tenant.
pub async fn list(desk: &Desk<'_>) -> anyhow::Result<ExitCode> {
    let (approvals, principal, _) = match desk.open().await? {
        Ok(opened) => opened,
        Err(r) => return desk.refuse(&r),
    };
    // As `GET /v1/approvals`: the pending plans are for approvers only (grants and rejections
    // are judged by the desk, which names its refusal `approver_denied`).
    if !principal.has_scope(SCOPE_GRANT) && !principal.has_scope(SCOPE_SIGN_OFF) {
        let message = format!("`{}` holds neither `{SCOPE_GRANT}` nor `{SCOPE_SIGN_OFF}`", principal.subject);
        return desk.refuse(&Refusal { code: "forbidden", message });
    }
    let pending = approvals.pending_approvals(&principal).await.map_err(|e| anyhow::anyhow!("{e}"))?;
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
    let (approvals, principal, auth) = match desk.open().await? {
        Ok(opened) => opened,
        Err(r) => return desk.refuse(&r),
    };
    let result = approvals.grant_via(&principal, id, auth).await;
    report(desk, "approve", result)
}

/// Rejects pending request `id` with `reason`.
pub async fn reject(desk: &Desk<'_>, id: &str, reason: &str) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(!reason.trim().is_empty(), "--reason must not be empty");
    let (approvals, principal, auth) = match desk.open().await? {
        Ok(opened) => opened,
        Err(r) => return desk.refuse(&r),
    };
    let result = approvals.reject_via(&principal, id, reason, auth).await;
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
            desk.refuse(&Refusal { code: rejection.code.as_str(), message: rejection.message })
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
