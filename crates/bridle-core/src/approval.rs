//! Approvals bound to plans: requests, grants, and the pure rules for granting and binding.
//!
//! The ledger (a port) stores these records and consumes them atomically; this module only
//! decides. Every function here is total: it returns a verdict, never panics.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::code::Code;
use crate::contract::ApprovalLevel;
use crate::plan::{Plan, PlanHash};
use crate::principal::Principal;
use crate::verdict::Rejection;

/// Scope an approver needs for any grant.
pub const SCOPE_GRANT: &str = "approval:grant";
/// Scope one of the two approvers of a `sign_off` needs.
pub const SCOPE_SIGN_OFF: &str = "approval:sign_off";

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for grants.
    Pending,
    /// Enough grants; usable once.
    Granted,
    /// Refused by a human.
    Rejected,
    /// Used by a job; never usable again.
    Consumed,
}

impl ApprovalStatus {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Granted => "granted",
            Self::Rejected => "rejected",
            Self::Consumed => "consumed",
        }
    }

    /// Parses a stable name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(Self::Pending),
            "granted" => Some(Self::Granted),
            "rejected" => Some(Self::Rejected),
            "consumed" => Some(Self::Consumed),
            _ => None,
        }
    }
}

/// One human's grant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// Approver subject.
    pub approver: String,
    /// Whether the approver held `approval:sign_off` when granting.
    pub sign_off: bool,
    /// When it was given.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// An approval request and, once granted, the approval itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Request id (also the approval id).
    pub id: String,
    /// Tenant of the plan.
    pub tenant: String,
    /// The plan shown to approvers.
    pub plan: Plan,
    /// Hash of the plan; what the approval binds.
    pub plan_hash: PlanHash,
    /// Who asked (the plan's subject).
    pub requester: String,
    /// Level needed.
    pub level: ApprovalLevel,
    /// Status.
    pub status: ApprovalStatus,
    /// Grants so far.
    pub grants: Vec<Grant>,
    /// Reason given with a rejection.
    pub rejection_reason: Option<String>,
    /// Created at.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Unusable at or after this instant.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Job that consumed it.
    pub consumed_by: Option<String>,
    /// What the approver is shown beside the plan: `reasons`, why approval is needed (the
    /// escalation rules that fired, else the tool's default level; never empty), and
    /// `history: {failures, successes}` when the action failed before for the same diagnosis on
    /// the same equipment class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<serde_json::Value>,
}

impl ApprovalRequest {
    /// A new pending request for `plan`.
    pub fn new(
        id: String,
        plan: Plan,
        plan_hash: PlanHash,
        level: ApprovalLevel,
        now: OffsetDateTime,
        expires_at: OffsetDateTime,
    ) -> Self {
        Self {
            id,
            tenant: plan.tenant.clone(),
            requester: plan.subject.clone(),
            plan,
            plan_hash,
            level,
            status: ApprovalStatus::Pending,
            grants: Vec::new(),
            rejection_reason: None,
            created_at: now,
            expires_at,
            consumed_by: None,
            context: None,
        }
    }

    /// The approver who decided it (the grants' subjects joined by `+`), for audit.
    pub fn approvers(&self) -> Option<String> {
        if self.grants.is_empty() {
            None
        } else {
            Some(self.grants.iter().map(|g| g.approver.as_str()).collect::<Vec<_>>().join("+"))
        }
    }
}

/// The hash of the change a plan asks for, whoever asks and in whichever run: hex SHA-256 of
/// the RFC 8785 form of `{tenant, tool, arguments}`. Pending requests with the same one ask an
/// approver to decide the same change (the console groups them).
pub fn change_hash(plan: &Plan) -> Result<String, crate::plan::CanonicalError> {
    use sha2::{Digest, Sha256};
    let change = serde_json::json!({"tenant": plan.tenant, "tool": plan.tool, "arguments": plan.arguments});
    let bytes = crate::plan::canonical_value_bytes(&change)?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Whether grants satisfy a level.
pub fn satisfies(level: ApprovalLevel, grants: &[Grant]) -> bool {
    let mut approvers: Vec<&str> = grants.iter().map(|g| g.approver.as_str()).collect();
    approvers.sort_unstable();
    approvers.dedup();
    match level {
        ApprovalLevel::Auto => true,
        ApprovalLevel::Approval => !approvers.is_empty(),
        ApprovalLevel::SignOff => approvers.len() >= 2 && grants.iter().any(|g| g.sign_off),
    }
}

/// Checks that `approver` may add a grant to `request`; `service` is the plan's service, if any.
pub fn check_grant(
    request: &ApprovalRequest,
    approver: &Principal,
    service: Option<&str>,
    now: OffsetDateTime,
) -> Result<(), Rejection> {
    let deny = |why: String| Err(Rejection::new(Code::ApproverDenied, why));
    if !approver.has_scope(SCOPE_GRANT) {
        return deny(format!("`{}` lacks the `{SCOPE_GRANT}` scope", approver.subject));
    }
    if approver.tenant != request.tenant {
        return deny(format!("`{}` belongs to another tenant", approver.subject));
    }
    if let Some(service) = service.filter(|s| !s.is_empty())
        && !approver.services.contains(service)
    {
        return deny(format!("`{}` does not hold the service `{service}`", approver.subject));
    }
    if approver.subject == request.requester {
        return deny("the requester cannot approve their own plan".to_owned());
    }
    if request.grants.iter().any(|g| g.approver == approver.subject) {
        return deny(format!("`{}` already granted this request", approver.subject));
    }
    match request.status {
        ApprovalStatus::Pending => {}
        other => return deny(format!("the request is {}", other.as_str())),
    }
    if now >= request.expires_at {
        return Err(Rejection::new(Code::ApprovalExpired, format!("approval `{}` has expired", request.id)));
    }
    Ok(())
}

/// Decides whether `request` (looked up by the id the caller gave) authorizes `plan_hash` at
/// `level` now. Order: missing, replayed, expired, plan changed, not (yet) granted.
pub fn bind(
    id: &str,
    request: Option<&ApprovalRequest>,
    plan_hash: &PlanHash,
    level: ApprovalLevel,
    now: OffsetDateTime,
) -> Result<(), Rejection> {
    let Some(request) = request else {
        return Err(Rejection::new(Code::ApprovalRequired, format!("no approval `{id}` for this tenant")));
    };
    if request.status == ApprovalStatus::Consumed {
        return Err(Rejection::new(Code::ApprovalReplayed, format!("approval `{id}` was already used")));
    }
    if now >= request.expires_at {
        return Err(Rejection::new(Code::ApprovalExpired, format!("approval `{id}` has expired")));
    }
    if &request.plan_hash != plan_hash {
        return Err(Rejection::new(Code::PlanChanged, format!("approval `{id}` was granted for another plan"))
            .with_detail(serde_json::json!({"approved_plan_hash": request.plan_hash, "plan_hash": plan_hash})));
    }
    match request.status {
        ApprovalStatus::Granted if request.level >= level && satisfies(level, &request.grants) => Ok(()),
        ApprovalStatus::Rejected => Err(Rejection::new(
            Code::ApprovalRequired,
            format!("approval `{id}` was rejected: {}", request.rejection_reason.as_deref().unwrap_or("")),
        )),
        _ => Err(Rejection::new(
            Code::ApprovalRequired,
            format!("approval `{id}` is not granted at level `{}`", level.as_str()),
        )
        .with_detail(serde_json::json!({"approval_id": id}))),
    }
}

/// One field a plan changes: its value in the current state and the value the plan proposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// Key shared by the plan's arguments and the current state.
    pub field: String,
    /// Value in the current state.
    pub current: serde_json::Value,
    /// Value in the plan.
    pub proposed: serde_json::Value,
}

/// The plan's diff against the current state: one entry for each argument that names a
/// top-level field of `current` (same key), in argument-name order, equal values included
/// (`resource_version` is shown as is). Fields the plan does not touch are omitted; a
/// non-object on either side gives no entries.
pub fn diff(plan_args: &serde_json::Value, current: &serde_json::Value) -> Vec<FieldChange> {
    let (Some(args), Some(state)) = (plan_args.as_object(), current.as_object()) else { return Vec::new() };
    let mut changes: Vec<FieldChange> = args
        .iter()
        .filter_map(|(k, proposed)| {
            state.get(k).map(|cur| FieldChange { field: k.clone(), current: cur.clone(), proposed: proposed.clone() })
        })
        .collect();
    changes.sort_by(|a, b| a.field.cmp(&b.field));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::RunContext;
    use serde_json::json;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

    fn request(level: ApprovalLevel) -> Result<ApprovalRequest, crate::plan::CanonicalError> {
        let p = Principal::new("requester-1", "tenant-a", &["checkout"], &["service:scale"]);
        let plan = Plan::new("scale_replicas", &json!({"service": "checkout"}), &p, &RunContext::new("r", "i"));
        let hash = plan.hash()?;
        Ok(ApprovalRequest::new("a-1".into(), plan, hash, level, T0, T0 + time::Duration::minutes(5)))
    }

    fn approver(subject: &str, scopes: &[&str]) -> Principal {
        Principal::new(subject, "tenant-a", &["checkout"], scopes)
    }

    #[test]
    fn grant_rules() -> Result<(), Box<dyn std::error::Error>> {
        let r = request(ApprovalLevel::Approval)?;
        let ok = approver("operator-2", &[SCOPE_GRANT]);
        assert!(check_grant(&r, &ok, Some("checkout"), T0).is_ok());
        let code = |p: &Principal, s| check_grant(&r, p, s, T0).err().map(|e| e.code);
        assert_eq!(code(&approver("operator-2", &[]), Some("checkout")), Some(Code::ApproverDenied));
        assert_eq!(code(&approver("requester-1", &[SCOPE_GRANT]), None), Some(Code::ApproverDenied));
        assert_eq!(code(&ok, Some("payments")), Some(Code::ApproverDenied));
        let other = Principal::new("operator-9", "tenant-b", &["checkout"], &[SCOPE_GRANT]);
        assert_eq!(code(&other, None), Some(Code::ApproverDenied));
        let late = check_grant(&r, &ok, None, T0 + time::Duration::hours(1)).err().map(|e| e.code);
        assert_eq!(late, Some(Code::ApprovalExpired));
        Ok(())
    }

    #[test]
    fn diff_shows_only_fields_the_plan_names() {
        let args = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
        let state = json!({"replicas": 2, "resource_version": 7, "cpu": 0.4});
        let d = diff(&args, &state);
        let shown: Vec<_> = d.iter().map(|c| (c.field.as_str(), &c.current, &c.proposed)).collect();
        assert_eq!(shown, [("replicas", &json!(2), &json!(3)), ("resource_version", &json!(7), &json!(7))]);
        assert_eq!(
            d.first().and_then(|c| serde_json::to_value(c).ok()),
            Some(json!({"field": "replicas", "current": 2, "proposed": 3}))
        );
        assert!(diff(&args, &json!([1, 2])).is_empty());
        assert!(diff(&json!(null), &state).is_empty());
        assert!(diff(&json!({"other": 1}), &state).is_empty());
        // Non-numeric and nested values are shown as they are.
        let d = diff(&json!({"mode": "fast", "tags": ["a"]}), &json!({"mode": "slow", "tags": null}));
        assert_eq!(d.len(), 2);
        assert_eq!(
            d.first(),
            Some(&FieldChange { field: "mode".into(), current: json!("slow"), proposed: json!("fast") })
        );
    }

    #[test]
    fn change_hash_ignores_the_run_and_requester_but_not_the_arguments() -> Result<(), Box<dyn std::error::Error>> {
        let p = Principal::new("requester-1", "tenant-a", &["checkout"], &["service:scale"]);
        let q = Principal::new("requester-2", "tenant-a", &["checkout"], &["service:scale"]);
        let args = json!({"service": "checkout", "replicas": 3});
        let reordered: serde_json::Value = serde_json::from_str(r#"{"replicas": 3, "service": "checkout"}"#)?;
        let one = Plan::new("scale_replicas", &args, &p, &RunContext::new("run-1", "inc-1"));
        let two = Plan::new("scale_replicas", &reordered, &q, &RunContext::new("run-2", ""));
        assert_ne!(one.hash()?, two.hash()?);
        assert_eq!(change_hash(&one)?, change_hash(&two)?);
        let other = Plan::new(
            "scale_replicas",
            &json!({"service": "checkout", "replicas": 4}),
            &p,
            &RunContext::new("run-1", ""),
        );
        assert_ne!(change_hash(&one)?, change_hash(&other)?);
        let elsewhere = Principal::new("requester-1", "tenant-b", &["checkout"], &["service:scale"]);
        let foreign = Plan::new("scale_replicas", &args, &elsewhere, &RunContext::new("run-1", ""));
        assert_ne!(change_hash(&one)?, change_hash(&foreign)?);
        Ok(())
    }

    #[test]
    fn sign_off_needs_two_distinct_one_with_scope() {
        let g = |a: &str, s| Grant { approver: a.into(), sign_off: s, at: T0 };
        assert!(!satisfies(ApprovalLevel::SignOff, &[g("a", true)]));
        assert!(!satisfies(ApprovalLevel::SignOff, &[g("a", true), g("a", true)]));
        assert!(!satisfies(ApprovalLevel::SignOff, &[g("a", false), g("b", false)]));
        assert!(satisfies(ApprovalLevel::SignOff, &[g("a", false), g("b", true)]));
        assert!(satisfies(ApprovalLevel::Approval, &[g("a", false)]));
    }

    #[test]
    fn bind_order() -> Result<(), Box<dyn std::error::Error>> {
        let mut r = request(ApprovalLevel::Approval)?;
        let h = r.plan_hash.clone();
        let code = |r: Option<&ApprovalRequest>, h: &PlanHash, now| {
            bind("a-1", r, h, ApprovalLevel::Approval, now).err().map(|e| e.code)
        };
        assert_eq!(code(None, &h, T0), Some(Code::ApprovalRequired));
        assert_eq!(code(Some(&r), &h, T0), Some(Code::ApprovalRequired));
        r.status = ApprovalStatus::Granted;
        r.grants.push(Grant { approver: "operator-2".into(), sign_off: false, at: T0 });
        assert_eq!(code(Some(&r), &h, T0), None);
        assert_eq!(code(Some(&r), &PlanHash("x".into()), T0), Some(Code::PlanChanged));
        assert_eq!(code(Some(&r), &h, r.expires_at), Some(Code::ApprovalExpired));
        r.status = ApprovalStatus::Consumed;
        assert_eq!(code(Some(&r), &h, T0), Some(Code::ApprovalReplayed));
        Ok(())
    }
}
