//! Laws, checked with generated inputs: an approval binds exactly one plan; deny overrides.

use bridle_core::Code;
use bridle_core::approval::{ApprovalRequest, ApprovalStatus, Grant, bind};
use bridle_core::contract::ApprovalLevel;
use bridle_core::plan::Plan;
use bridle_core::policy::{PolicyEngine, PolicySource};
use bridle_core::principal::{Principal, RunContext};
use proptest::prelude::*;
use serde_json::{Value, json};
use time::macros::datetime;

use super::support::{checkout, read_example};

static CHECKOUT: std::sync::LazyLock<bridle_core::config::Config> = std::sync::LazyLock::new(checkout);

struct Engines {
    none: PolicyEngine,
    open: PolicyEngine,
    closed: PolicyEngine,
}

static ENGINES: std::sync::LazyLock<Engines> = std::sync::LazyLock::new(|| {
    let c = &*CHECKOUT;
    let schema = read_example("policies/bridle.cedarschema").unwrap();
    let permit_all = PolicySource { name: "p".into(), text: "permit (principal, action, resource);".into() };
    let forbid_all =
        PolicySource { name: "f".into(), text: "@id(\"stop\") forbid (principal, action, resource);".into() };
    Engines {
        none: PolicyEngine::load(&schema, &[], &c.registry, None).unwrap(),
        open: PolicyEngine::load(&schema, std::slice::from_ref(&permit_all), &c.registry, None).unwrap(),
        closed: PolicyEngine::load(&schema, &[permit_all, forbid_all], &c.registry, None).unwrap(),
    }
});

fn approved(args: &Value) -> ApprovalRequest {
    let p = Principal::new("requester-1", "tenant-a", &["checkout"], &["service:scale"]);
    let plan = Plan::new("scale_replicas", args, &p, &RunContext::new("run-101", "inc-42"));
    let hash = plan.hash().unwrap();
    let now = datetime!(2026-01-01 00:00 UTC);
    let mut r =
        ApprovalRequest::new("a-1".into(), plan, hash, ApprovalLevel::Approval, now, now + time::Duration::hours(1));
    r.status = ApprovalStatus::Granted;
    r.grants.push(Grant { approver: "operator-2".into(), sign_off: false, at: now });
    r
}

fn args_strategy() -> impl Strategy<Value = Value> {
    ("[a-z0-9][a-z0-9-]{0,20}", any::<i64>(), 1..i64::MAX)
        .prop_map(|(service, replicas, rv)| json!({"service": service, "replicas": replicas, "resource_version": rv}))
}

proptest! {
    #[test]
    fn any_schema_valid_change_to_approved_arguments_is_plan_changed(changed in args_strategy()) {
        let tool = CHECKOUT.registry.get("scale_replicas").unwrap();
        let original = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
        prop_assume!(changed != original);
        prop_assert!(tool.schema.check(&changed).is_ok());
        let request = approved(&original);
        let p = Principal::new("requester-1", "tenant-a", &["checkout"], &["service:scale"]);
        let hash = Plan::new("scale_replicas", &changed, &p, &RunContext::new("run-101", "inc-42")).hash().unwrap();
        let now = datetime!(2026-01-01 00:10 UTC);
        let code = bind("a-1", Some(&request), &hash, ApprovalLevel::Approval, now).err().map(|r| r.code);
        prop_assert_eq!(code, Some(Code::PlanChanged));
    }

    #[test]
    fn key_order_never_changes_the_plan(replicas in 1..6i64, rv in 1..10_000i64) {
        let a: Value = serde_json::from_str(&format!(r#"{{"service":"checkout","replicas":{replicas},"resource_version":{rv}}}"#)).unwrap();
        let b: Value = serde_json::from_str(&format!(r#"{{"resource_version":{rv},"replicas":{replicas},"service":"checkout"}}"#)).unwrap();
        let request = approved(&a);
        let p = Principal::new("requester-1", "tenant-a", &["checkout"], &["service:scale"]);
        let hash = Plan::new("scale_replicas", &b, &p, &RunContext::new("run-101", "inc-42")).hash().unwrap();
        prop_assert!(bind("a-1", Some(&request), &hash, ApprovalLevel::Approval, datetime!(2026-01-01 00:10 UTC)).is_ok());
    }

    #[test]
    fn a_forbid_overrides_every_permit_and_nothing_is_allowed_by_default(
        services in proptest::collection::btree_set("[a-z]{1,8}", 0..4),
        scopes in proptest::collection::btree_set(prop_oneof![Just("service:read".to_owned()), Just("service:scale".to_owned()), "[a-z:]{1,12}"], 0..4),
        service in "[a-z]{1,8}",
    ) {
        let p = Principal { subject: "x".into(), tenant: "tenant-a".into(), services, scopes, agent: None };
        let tool = CHECKOUT.registry.get("get_service_snapshot").unwrap();
        let args = json!({"service": service});
        prop_assert!(!ENGINES.none.authorize(&p, tool, &args).allowed);
        prop_assert!(ENGINES.open.authorize(&p, tool, &args).allowed);
        let d = ENGINES.closed.authorize(&p, tool, &args);
        prop_assert!(!d.allowed);
        prop_assert_eq!(d.deciding, vec!["stop".to_owned()]);
    }
}
