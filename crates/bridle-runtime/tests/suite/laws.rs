//! Laws through the whole gate, with generated inputs.

use bridle_core::Code;
use bridle_core::ports::{BudgetKind, Debit};
use bridle_runtime::gate::CallRequest;
use bridle_runtime::store::Stores;
use proptest::prelude::*;
use serde_json::json;

use super::support::{H, run};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any change to an approved plan's arguments that passes every earlier step stops at
    /// binding with `plan_changed`, and nothing executes.
    #[test]
    fn a_changed_plan_never_runs_on_an_old_approval(replicas in 1..=4i64, rv in 1..=1_000i64) {
        prop_assume!((replicas, rv) != (3, 7));
        block_on(async {
            let h = H::checkout();
            let r = run();
            let approved = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
            h.approved("a-1", &approved, &r).await;
            let changed = json!({"service": "checkout", "replicas": replicas, "resource_version": rv});
            let out = h.gate.call(&h.who("requester-1"), &r, &CallRequest::new("scale_replicas", changed).with_approval("a-1")).await.unwrap();
            assert_eq!(out.code(), Some(Code::PlanChanged));
            assert_eq!(h.adapter.changes_applied(), 0);
        });
    }

    /// Debits never take a counter past its limit, whatever the sequence.
    #[test]
    fn budget_debits_never_exceed_the_limit(limit in 0..50u64, amounts in proptest::collection::vec(0..20u64, 0..40)) {
        block_on(async {
            let stores = Stores::memory();
            let mut expected = 0;
            for a in amounts {
                match stores.budgets.debit("t", "r", BudgetKind::Tokens, a, limit).await.unwrap() {
                    Debit::Accepted { used } => {
                        expected += a;
                        assert_eq!(used, expected);
                    }
                    Debit::Exhausted { used } => {
                        assert_eq!(used, expected);
                        assert!(expected + a > limit);
                    }
                }
                assert!(expected <= limit);
            }
        });
    }
}
