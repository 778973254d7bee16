//! Statistics of the feedback loop: average ranks, Spearman's rho with ties, and the power gate.
//!
//! Pure and total: NaN or infinite values are dropped in pairs before ranking, a constant
//! series has no correlation (`None`), and nothing panics.

use serde::{Deserialize, Serialize};

/// Below this many pairs no correlation is reported.
pub const MIN_PAIRS: usize = 10;
/// Below this many pairs a correlation is reported with a warning.
pub const ADEQUATE_PAIRS: usize = 30;

/// What the number of pairs allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Power {
    /// n < 10: no correlation reported.
    InsufficientData,
    /// 10 ≤ n < 30: reported with a warning.
    Low,
    /// n ≥ 30.
    Adequate,
}

impl Power {
    /// The gate for `n` pairs.
    pub const fn of(n: usize) -> Self {
        if n < MIN_PAIRS {
            Self::InsufficientData
        } else if n < ADEQUATE_PAIRS {
            Self::Low
        } else {
            Self::Adequate
        }
    }

    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InsufficientData => "insufficient_data",
            Self::Low => "low_power",
            Self::Adequate => "ok",
        }
    }
}

/// 1-based ranks of `values`; tied values share the average of the ranks they span.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| {
        let (x, y) = (values.get(*a).copied().unwrap_or(0.0), values.get(*b).copied().unwrap_or(0.0));
        x.total_cmp(&y)
    });
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let value = |i: usize| order.get(i).and_then(|k| values.get(*k)).copied();
        let mut end = start + 1;
        while end < order.len() && value(end) == value(start) {
            end += 1;
        }
        // Ranks start+1 ..= end share their mean.
        let rank = (start + 1 + end) as f64 / 2.0;
        for k in order.get(start..end).unwrap_or_default() {
            if let Some(r) = ranks.get_mut(*k) {
                *r = rank;
            }
        }
        start = end;
    }
    ranks
}

/// Pearson's r of two equally long series; `None` when shorter than 2 or either is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// Spearman's rho of the pairs (Pearson's r of the average ranks, so ties are handled);
/// pairs with a non-finite value are dropped. `None` when fewer than 2 pairs remain or either
/// side is constant.
pub fn spearman(pairs: &[(f64, f64)]) -> Option<f64> {
    let kept: Vec<(f64, f64)> = pairs.iter().copied().filter(|(a, b)| a.is_finite() && b.is_finite()).collect();
    let x: Vec<f64> = kept.iter().map(|p| p.0).collect();
    let y: Vec<f64> = kept.iter().map(|p| p.1).collect();
    pearson(&average_ranks(&x), &average_ranks(&y))
}

/// A correlation behind the power gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correlation {
    /// What is correlated with what (`confidence ~ rating`).
    pub of: String,
    /// Pairs with finite values.
    pub n: usize,
    /// `insufficient_data`, `low_power` or `ok`.
    pub power: Power,
    /// Spearman's rho; `None` below the gate or when a side is constant.
    pub rho: Option<f64>,
    /// Approximate 95 % interval of rho (Fisher z with Fieller's standard error
    /// `sqrt(1.06 / (n − 3))`); `None` with rho.
    pub ci95: Option<(f64, f64)>,
    /// Why there is no rho, or why to read it with care.
    pub warning: Option<String>,
}

/// Spearman's rho of `pairs` behind the power gate: n < 10 → no rho (`insufficient_data`),
/// 10 ≤ n < 30 → rho with a warning (`low_power`), n ≥ 30 → rho.
pub fn gated_spearman(of: &str, pairs: &[(f64, f64)]) -> Correlation {
    let n = pairs.iter().filter(|(a, b)| a.is_finite() && b.is_finite()).count();
    let power = Power::of(n);
    let mut out = Correlation { of: of.to_owned(), n, power, rho: None, ci95: None, warning: None };
    if power == Power::InsufficientData {
        out.warning = Some(format!("{n} pairs: no correlation below {MIN_PAIRS}"));
        return out;
    }
    out.rho = spearman(pairs);
    match out.rho {
        None => out.warning = Some("one side is constant: no correlation".to_owned()),
        Some(rho) => {
            out.ci95 = Some(fisher_interval(rho, n));
            if power == Power::Low {
                out.warning = Some(format!("{n} pairs: low power below {ADEQUATE_PAIRS}, read with care"));
            }
        }
    }
    out
}

/// Fisher-z 95 % interval of a Spearman rho over `n` pairs (n > 3).
fn fisher_interval(rho: f64, n: usize) -> (f64, f64) {
    if n <= 3 {
        return (-1.0, 1.0);
    }
    let z = rho.clamp(-0.999_999, 0.999_999).atanh();
    let se = (1.06 / (n as f64 - 3.0)).sqrt();
    ((z - 1.96 * se).tanh(), (z + 1.96 * se).tanh())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn ties_share_their_average_rank() {
        assert_eq!(average_ranks(&[10.0, 20.0, 20.0, 5.0, 20.0]), [2.0, 4.0, 4.0, 1.0, 4.0]);
        assert_eq!(average_ranks(&[]), Vec::<f64>::new());
    }

    #[test]
    fn spearman_of_a_small_tied_example_by_hand() {
        // x ranks 1, 2.5, 2.5, 4; y ranks 1, 3, 2, 4: r = 4.5 / sqrt(4.5 · 5) = sqrt(0.9).
        let rho = spearman(&[(1.0, 1.0), (2.0, 3.0), (2.0, 2.0), (3.0, 4.0)]).unwrap();
        assert!((rho - 0.9_f64.sqrt()).abs() < 1e-12, "{rho}");
    }

    #[test]
    fn constant_or_short_series_have_no_rho() {
        assert_eq!(spearman(&[(1.0, 2.0), (1.0, 3.0), (1.0, 4.0)]), None);
        assert_eq!(spearman(&[(1.0, 2.0)]), None);
        assert_eq!(spearman(&[(f64::NAN, 2.0), (1.0, f64::INFINITY)]), None);
    }

    #[test]
    fn the_power_gate_at_9_10_29_30() {
        let pairs = |n: usize| (0..n).map(|i| (i as f64, (i * i) as f64)).collect::<Vec<_>>();
        let c9 = gated_spearman("x ~ y", &pairs(9));
        assert_eq!((c9.power, c9.rho, c9.n), (Power::InsufficientData, None, 9));
        assert!(c9.warning.unwrap().contains("no correlation"));
        let c10 = gated_spearman("x ~ y", &pairs(10));
        assert_eq!((c10.power, c10.rho), (Power::Low, Some(1.0)));
        assert!(c10.warning.unwrap().contains("low power"));
        let c29 = gated_spearman("x ~ y", &pairs(29));
        assert_eq!(c29.power, Power::Low);
        assert!(c29.warning.is_some());
        let c30 = gated_spearman("x ~ y", &pairs(30));
        assert_eq!((c30.power, c30.rho, c30.warning), (Power::Adequate, Some(1.0), None));
        assert_eq!(c30.power.as_str(), "ok");
    }
}
