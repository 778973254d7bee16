//! Spearman's rho against recorded scipy figures (`tests/data/feedback/spearman.json`, made by
//! `scipy.stats.spearmanr`, which averages tied ranks), including the textbook IQ / TV example
//! whose rho is exactly −29/165.

use bridle_core::feedback::stats::{Power, gated_spearman, spearman};
use serde_json::Value;

#[test]
fn spearman_matches_the_recorded_scipy_figures() {
    let text = include_str!("../data/feedback/spearman.json");
    let data: Value = serde_json::from_str(text).unwrap();
    let cases = data["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for case in cases {
        let nums = |k: &str| case[k].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>();
        let pairs: Vec<(f64, f64)> = nums("x").into_iter().zip(nums("y")).collect();
        let expected = case["rho"].as_f64().unwrap();
        let rho = spearman(&pairs).unwrap();
        assert!((rho - expected).abs() < 1e-12, "{}: {rho} vs scipy {expected}", case["name"]);
        // The same pairs behind the gate: 10 and 12 pairs are low power, 20 too.
        let gated = gated_spearman("x ~ y", &pairs);
        assert_eq!(gated.power, Power::Low);
        assert_eq!(gated.rho, Some(rho));
        let (lo, hi) = gated.ci95.unwrap();
        assert!(lo < rho && rho < hi, "{lo} < {rho} < {hi}");
    }
    let textbook = spearman(&[
        (106.0, 7.0),
        (100.0, 27.0),
        (86.0, 2.0),
        (101.0, 50.0),
        (99.0, 28.0),
        (103.0, 29.0),
        (97.0, 20.0),
        (113.0, 12.0),
        (112.0, 6.0),
        (110.0, 17.0),
    ])
    .unwrap();
    assert!((textbook - (-29.0 / 165.0)).abs() < 1e-12, "{textbook}");
}
