//! The CUSUM detector against published average run lengths, and synthetic decision streams.
//!
//! Reference figures (k = 0.5, standardized normal data, zero start; Siegmund's approximation and
//! the tables of Montgomery, *Introduction to Statistical Quality Control*): two-sided in control
//! h = 4 → ARL0 ≈ 168, h = 5 → ≈ 465; a 1σ shift h = 4 → ≈ 8.38, h = 5 → ≈ 10.4.

use bridle_core::decision::DecisionRecord;
use bridle_core::drift::{Cusum, Level, Monitor, Params};
use serde_json::json;
use time::OffsetDateTime;

/// splitmix64 + Box–Muller: a small seeded normal generator (no extra dependency).
struct Normal {
    state: u64,
    spare: Option<f64>,
}

impl Normal {
    fn new(seed: u64) -> Self {
        Self { state: seed, spare: None }
    }

    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // 53 random bits in (0, 1].
        ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn next(&mut self) -> f64 {
        if let Some(s) = self.spare.take() {
            return s;
        }
        let (u1, u2) = (self.uniform(), self.uniform());
        let r = (-2.0 * u1.ln()).sqrt();
        let t = std::f64::consts::TAU * u2;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }
}

fn chart(h: f64) -> Params {
    Params { k: 0.5, warning: h, critical: h, baseline: Some((0.0, 1.0)), ..Params::default() }
}

/// Mean run length to the first critical alarm over `runs` charts, data N(shift, 1).
fn arl(h: f64, shift: f64, runs: u32, seed: u64) -> f64 {
    let mut rng = Normal::new(seed);
    let mut total = 0u64;
    for _ in 0..runs {
        let mut c = Cusum::new(chart(h));
        loop {
            let step = c.update(shift + rng.next()).unwrap();
            if step.level == Level::Critical {
                total += step.index + 1;
                break;
            }
        }
    }
    total as f64 / f64::from(runs)
}

fn within(measured: f64, expected: f64, tolerance: f64, what: &str) {
    let err = (measured - expected).abs() / expected;
    eprintln!("{what}: measured {measured:.2}, published {expected}, off by {:.1}%", err * 100.0);
    assert!(err < tolerance, "{what}: measured {measured:.2}, published {expected}");
}

#[test]
fn in_control_run_lengths_match_the_tables() {
    within(arl(4.0, 0.0, 10_000, 1), 168.0, 0.10, "ARL0 h=4");
    within(arl(5.0, 0.0, 4_000, 2), 465.0, 0.10, "ARL0 h=5");
}

#[test]
fn one_sigma_shift_run_lengths_match_the_tables() {
    within(arl(4.0, 1.0, 20_000, 3), 8.38, 0.10, "ARL1 h=4");
    within(arl(5.0, 1.0, 20_000, 4), 10.4, 0.10, "ARL1 h=5");
    // The lower side sees the same shift downwards.
    within(arl(4.0, -1.0, 20_000, 5), 8.38, 0.10, "ARL1 h=4 down");
}

fn record(i: u64, agent: &str, confidence: f64, verdict: &str) -> DecisionRecord {
    DecisionRecord {
        decision_id: format!("d-{i}"),
        pipeline_run_id: "run".into(),
        tenant: "t".into(),
        agent: agent.into(),
        model: "m".into(),
        input: json!({}),
        output: json!({}),
        prompt_tokens: 100,
        completion_tokens: 20,
        latency_ms: 300,
        harness_checks: json!({"confidence": confidence, "injection_detected": false}),
        final_verdict: verdict.into(),
        created_at: OffsetDateTime::UNIX_EPOCH,
        prompt_hash: None,
        tool_schema_hash: None,
        policy_version: None,
    }
}

fn confidence_monitor() -> Monitor {
    let params = Params { baseline: Some((0.80, 0.05)), ..Params::default() };
    Monitor::new(params, Some("confidence".into()))
}

#[test]
fn a_stable_decision_stream_raises_false_alarms_at_the_theoretical_rate() {
    // After each critical alarm the sums reset, so alarms form a renewal process: one per ARL0.
    let mut rng = Normal::new(7);
    let mut m = confidence_monitor();
    let n = 30_000u64;
    let mut critical = 0u32;
    let mut warnings = 0u32;
    for i in 0..n {
        for (_, alarm) in m.observe(&record(i, "advisor", 0.80 + 0.05 * rng.next(), "accepted")) {
            match alarm.level {
                Level::Critical => critical += 1,
                _ => warnings += 1,
            }
        }
    }
    let per = n as f64 / f64::from(critical);
    eprintln!("{n} records: {critical} critical (one per {per:.0}), {warnings} warnings");
    within(per, 168.0, 0.15, "records per false critical alarm");
    assert!(warnings > critical * 2, "warnings come far more often than critical alarms");
}

#[test]
fn a_shifted_decision_stream_is_detected_after_the_theoretical_delay() {
    // A one-σ drop in confidence starting at record 50: mean delay to the first critical alarm.
    let mut rng = Normal::new(11);
    let mut delays = Vec::new();
    let mut early = 0u32;
    for _ in 0..2_000 {
        let mut m = confidence_monitor();
        for i in 0.. {
            let mean = if i < 50 { 0.80 } else { 0.75 };
            let alarms = m.observe(&record(i, "advisor", mean + 0.05 * rng.next(), "accepted"));
            if alarms.iter().any(|(_, a)| a.level == Level::Critical) {
                if i < 50 {
                    early += 1;
                    m = confidence_monitor();
                    continue;
                }
                delays.push((i - 50 + 1) as f64);
                break;
            }
        }
    }
    let mean = delays.iter().sum::<f64>() / delays.len() as f64;
    let early_rate = f64::from(early) / (f64::from(early) + 2_000.0);
    eprintln!("delay {mean:.2} records; {early} false alarms in the first 50 records ({early_rate:.2} of attempts)");
    // A chart that has run in control for a while may sit above zero when the shift comes, so
    // the delay is at most the zero-start ARL1 (8.38) and not much below it.
    assert!((0.85 * 8.38..=8.38 * 1.03).contains(&mean), "delay {mean}");
    // About 50 / 168 of the in-control stretches alarm falsely (fewer: the ramp from zero).
    assert!((0.15..=0.30).contains(&early_rate), "early false alarms {early_rate}");
}

#[test]
fn a_rejection_spike_in_a_learned_baseline_is_critical_once_per_episode() {
    let mut m = Monitor::new(Params::default(), Some("rejection_rate".into()));
    let mut rng = Normal::new(3);
    let mut opened = 0;
    for i in 0..200u64 {
        // Every tenth record rejected, then 60 % at random from record 100 on.
        let rejected = if i < 100 { i % 10 == 0 } else { rng.uniform() < 0.60 };
        let verdict = if rejected { "rejected" } else { "accepted" };
        for (key, alarm) in m.observe(&record(i, "advisor", 0.8, verdict)) {
            assert_eq!(key.metric, "rejection_rate");
            if alarm.opens_episode {
                assert!(alarm.index >= 100, "opened at {}", alarm.index);
                opened += 1;
            }
        }
    }
    let (_, c, trace) = m.series().next().unwrap();
    assert_eq!(opened, 1, "one announced alarm for a sustained shift: {:?}", c.alarms());
    assert_eq!(c.level(), Level::Critical);
    assert_eq!(trace.len(), 170);
}
