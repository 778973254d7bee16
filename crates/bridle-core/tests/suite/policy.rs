//! Policy decisions on the checkout example: deny names its policy, errors deny.
use bridle_core::principal::Principal;
use serde_json::json;

use super::support::checkout;

#[test]
fn scoped_read_is_allowed_by_the_named_permit() {
    let c = checkout();
    let tool = c.registry.get("get_service_snapshot").unwrap();
    let d = c.policy.authorize(&c.principals["requester-1"], tool, &json!({"service": "checkout"}));
    assert!(d.allowed, "{d:?}");
    assert_eq!(d.deciding, ["scoped-service-call"]);
}

#[test]
fn read_only_principal_cannot_change() {
    let c = checkout();
    let tool = c.registry.get("scale_replicas").unwrap();
    let d = c.policy.authorize(
        &c.principals["viewer-4"],
        tool,
        &json!({"service": "checkout", "replicas": 3, "resource_version": 7}),
    );
    assert!(!d.allowed);
    assert_eq!(d.deciding, ["change-needs-scale-scope"]);
}

#[test]
fn unheld_service_is_default_denied() {
    let c = checkout();
    let tool = c.registry.get("get_service_snapshot").unwrap();
    let d = c.policy.authorize(&c.principals["requester-1"], tool, &json!({"service": "payments"}));
    assert!(!d.allowed);
    assert!(d.deciding.is_empty());
}

#[test]
fn arguments_that_do_not_fit_policy_types_deny() {
    let c = checkout();
    let tool = c.registry.get("get_service_snapshot").unwrap();
    let p = Principal::new("x", "tenant-a", &["checkout"], &["service:read"]);
    // A float beyond decimal range cannot become a policy value: deny, never allow.
    let d = c.policy.authorize(&p, tool, &json!({"service": "checkout", "n": 1e300}));
    assert!(!d.allowed);
    assert!(!d.errors.is_empty());
}

#[test]
fn cache_does_not_leak_between_principals() {
    let c = checkout();
    let tool = c.registry.get("get_service_snapshot").unwrap();
    let a = Principal::new("same", "tenant-a", &["checkout"], &["service:read"]);
    let b = Principal::new("same", "tenant-a", &["checkout"], &[]);
    assert!(c.policy.authorize(&a, tool, &json!({"service": "checkout"})).allowed);
    assert!(!c.policy.authorize(&b, tool, &json!({"service": "checkout"})).allowed);
}

#[test]
fn cache_tells_apart_principals_whose_sets_would_join_alike() {
    let c = checkout();
    let tool = c.registry.get("get_service_snapshot").unwrap();
    // Joined with commas, both service sets read `a,checkout`: a cache keyed by such text would
    // hand the second principal the first one's entities.
    let joined = Principal::new("same", "tenant-a", &["a,checkout"], &["service:read"]);
    let apart = Principal::new("same", "tenant-a", &["a", "checkout"], &["service:read"]);
    assert!(!c.policy.authorize(&joined, tool, &json!({"service": "checkout"})).allowed);
    assert!(c.policy.authorize(&apart, tool, &json!({"service": "checkout"})).allowed);
    assert!(!c.policy.authorize(&joined, tool, &json!({"service": "checkout"})).allowed);
}
