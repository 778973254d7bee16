//! The agent-loop lab's rules: the three goals with reference values computed here (guardrail
//! rails, scaffold posts, kgf → N), the replay state machine that turns a pasted transcript into
//! rounds and stops, and the comparison of the final answer's numbers with the references.
//!
//! The state machine executes nothing: [`Replay::next_calls`] hands the calls of the next round
//! to the caller (the runtime runs them through the gate) and [`Replay::record`] takes their
//! outcomes back. A round is one pasted answer. An answer with no tool call is the final answer.
//! Stops: the final answer; the round limit; a call identical to an earlier one (it is not
//! executed); `stop_after_failures` failed rounds in a row (a round fails when any of its calls
//! was rejected, or it held too many calls); the transcript running out.

use std::collections::HashSet;
use std::sync::LazyLock;

use bridle_core::Code;
use bridle_core::Rejection;
use bridle_core::answer::{IntakeLimits, ParsedCall, parse_answer};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Lang, Outcome, check_failure_stop, check_field, check_max_rounds};

/// Most answers a transcript may hold (the round limit stops replay long before).
pub const MAX_ANSWERS: usize = 50;
/// Default round limit.
pub const DEFAULT_MAX_ROUNDS: usize = 6;
/// Default consecutive failed rounds that stop the loop.
pub const DEFAULT_STOP_AFTER_FAILURES: usize = 2;
/// Default relative tolerance for measured values (counts are exact).
pub const DEFAULT_TOLERANCE: f64 = 0.005;
/// Standard gravity: 1 kgf in newtons.
pub const KGF_IN_N: f64 = 9.806_65;

/// The three loop goals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// Intermediate rails and their spacing for a top rail at `value` cm (rule 13, item 2).
    Guardrail,
    /// Posts and their spacing along a `value` m run of steel-pipe scaffold (rule 60, item 1).
    Scaffold,
    /// `value` kgf in newtons.
    Force,
}

impl Goal {
    /// The value the goal uses when none is given.
    pub const fn default_value(self) -> f64 {
        match self {
            Self::Guardrail => 150.0,
            Self::Scaffold => 20.0,
            Self::Force => 100.0,
        }
    }

    /// Accepted values (inclusive).
    pub const fn range(self) -> (f64, f64) {
        match self {
            Self::Guardrail => (90.0, 300.0),
            Self::Scaffold => (1.0, 1000.0),
            Self::Force => (0.001, 1_000_000.0),
        }
    }

    /// The task given to the model.
    pub fn statement(self, value: f64, lang: Lang) -> String {
        match (self, lang) {
            (Self::Guardrail, Lang::Ko) => format!(
                "상부 난간대를 바닥면에서 {value} cm 높이에 설치한다. 산업안전보건기준에 관한 규칙을 찾아 중간 난간대를 몇 단으로, 몇 mm 간격으로 설치해야 하는지 구하라."
            ),
            (Self::Guardrail, Lang::En) => format!(
                "A top rail is installed {value} cm above the floor. Look up the Occupational Safety and Health Standards Rules and work out how many tiers of intermediate rails are needed and their spacing in mm."
            ),
            (Self::Scaffold, Lang::Ko) => format!(
                "길이 {value} m 구간에 강관비계를 띠장 방향으로 세운다. 규칙의 비계기둥 간격 기준을 찾아 필요한 최소 기둥 수와 균등 배치했을 때의 기둥 간격(mm)을 구하라."
            ),
            (Self::Scaffold, Lang::En) => format!(
                "A steel-pipe scaffold runs {value} m along the ledger direction. Find the post spacing rule and work out the fewest posts needed and their even spacing in mm."
            ),
            (Self::Force, Lang::Ko) => format!("난간에 걸리는 하중 {value} kgf를 뉴턴(N)으로 바꿔라."),
            (Self::Force, Lang::En) => format!("Convert a load of {value} kgf on a guardrail to newtons (N)."),
        }
    }
}

/// What a reference value measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// An exact count.
    Count,
    /// A length in millimetres (mm, cm, m and km in the answer are converted).
    LengthMm,
    /// A force in newtons (N and kN in the answer are converted).
    ForceN,
}

/// A value the final answer must state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// What it is.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its kind and unit.
    pub measure: Measure,
}

/// The references of `goal` at `value`, computed from the rules.
pub fn references(goal: Goal, value: f64) -> Vec<Reference> {
    match goal {
        Goal::Guardrail => {
            // Up to 120 cm one rail midway; above it, 2+ evenly spaced tiers with gaps ≤ 60 cm.
            let tiers = if value <= 120.0 { 1.0 } else { ((value / 60.0).ceil() - 1.0).max(2.0) };
            vec![
                Reference { name: "intermediate_rails".into(), value: tiers, measure: Measure::Count },
                Reference {
                    name: "rail_spacing_mm".into(),
                    value: round2(value * 10.0 / (tiers + 1.0)),
                    measure: Measure::LengthMm,
                },
            ]
        }
        Goal::Scaffold => {
            // Posts at most 1.85 m apart along the ledger: spans = ceil(L / 1.85), posts = spans + 1.
            let spans = (value / 1.85).ceil().max(1.0);
            vec![
                Reference { name: "posts".into(), value: spans + 1.0, measure: Measure::Count },
                Reference {
                    name: "post_spacing_mm".into(),
                    value: round2(value * 1000.0 / spans),
                    measure: Measure::LengthMm,
                },
            ]
        }
        Goal::Force => vec![Reference {
            name: "force_n".into(),
            value: bridle_tools::convert(value, "kgf", "N").unwrap_or(value * KGF_IN_N),
            measure: Measure::ForceN,
        }],
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A loop lab input: the goal, the pasted answers (one per round) and the stop rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopInput {
    /// Which goal.
    pub goal: Goal,
    /// The goal's value (cm, m or kgf); the goal's default when absent.
    #[serde(default)]
    pub value: Option<f64>,
    /// The model's answers, in order.
    pub answers: Vec<String>,
    /// Round limit, 1–10.
    #[serde(default)]
    pub max_rounds: Option<usize>,
    /// Failed rounds in a row that stop the loop, 2 or 3.
    #[serde(default)]
    pub stop_after_failures: Option<usize>,
    /// Relative tolerance for measured values.
    #[serde(default)]
    pub tolerance: Option<f64>,
}

/// Why replay stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// An answer without a tool call.
    FinalAnswer,
    /// The round limit was reached before a final answer.
    MaxRounds,
    /// A call identical to an earlier one.
    RepeatedCall,
    /// Too many failed rounds in a row.
    ConsecutiveFailures,
    /// The transcript ended without a final answer.
    TranscriptEnded,
}

/// One call of a round and what the gate said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopCall {
    /// Tool named.
    pub tool: String,
    /// Arguments as read.
    pub arguments: Value,
    /// Executed or not.
    pub ok: bool,
    /// Reject code.
    pub code: Option<Code>,
    /// The tool's result.
    pub result: Option<Value>,
}

/// One round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// 1-based.
    pub round: usize,
    /// The calls run (empty for the final answer or an answer refused at intake).
    pub calls: Vec<LoopCall>,
    /// Intake refusal of the answer (`too_many_calls`), if any.
    pub intake_code: Option<Code>,
    /// Whether the round failed.
    pub failed: bool,
}

/// A reference and what the final answer said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceCheck {
    /// The reference.
    #[serde(flatten)]
    pub reference: Reference,
    /// The matching number found in the final answer (in the reference's unit).
    pub found: Option<f64>,
    /// Whether one matched.
    pub ok: bool,
}

/// What `bridle lab loop` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopReport {
    /// `pass`: a final answer stating every reference.
    pub verdict: Outcome,
    /// Goal.
    pub goal: Goal,
    /// Goal value used.
    pub value: f64,
    /// Rounds replayed (the final answer's included).
    pub rounds: usize,
    /// Tool calls executed.
    pub tool_calls: usize,
    /// Tool calls rejected.
    pub failed_calls: usize,
    /// Why replay stopped.
    pub stop: Stop,
    /// Answers after the stop, not replayed.
    pub unused_answers: usize,
    /// The references and the final answer's numbers.
    pub references: Vec<ReferenceCheck>,
    /// Each round.
    pub round_log: Vec<Round>,
    /// Why it failed.
    pub reasons: Vec<String>,
}

/// Replay of a transcript, one round at a time.
#[derive(Debug)]
pub struct Replay {
    goal: Goal,
    value: f64,
    answers: Vec<String>,
    max_rounds: usize,
    stop_after_failures: usize,
    tolerance: f64,
    limits: IntakeLimits,
    next: usize,
    seen: HashSet<String>,
    pending: Option<Vec<ParsedCall>>,
    log: Vec<Round>,
    failures_in_row: usize,
    stop: Option<Stop>,
    checks: Vec<ReferenceCheck>,
}

impl Replay {
    /// Validates `input` against the lab's limits.
    pub fn new(input: LoopInput, limits: IntakeLimits) -> Result<Self, Rejection> {
        let max_rounds = check_max_rounds(input.max_rounds.unwrap_or(DEFAULT_MAX_ROUNDS))?;
        let stop_after_failures = check_failure_stop(input.stop_after_failures.unwrap_or(DEFAULT_STOP_AFTER_FAILURES))?;
        if input.answers.len() > MAX_ANSWERS {
            return Err(Rejection::new(
                Code::TooManyRounds,
                format!("the transcript has `{}` answers; at most {MAX_ANSWERS} are read", input.answers.len()),
            ));
        }
        for (i, a) in input.answers.iter().enumerate() {
            check_field(&format!("answers[{i}]"), a)?;
        }
        let value = input.value.unwrap_or(input.goal.default_value());
        let (lo, hi) = input.goal.range();
        if !(lo..=hi).contains(&value) {
            return Err(Rejection::new(Code::OutOfRange, format!("goal value `{value}` is outside {lo}–{hi}")));
        }
        let tolerance = input.tolerance.unwrap_or(DEFAULT_TOLERANCE);
        if !(0.0..=0.5).contains(&tolerance) {
            return Err(Rejection::new(Code::OutOfRange, format!("tolerance `{tolerance}` is outside 0–0.5")));
        }
        // A pasted answer is read whole: the field limit, not the gate's, bounds it.
        let limits = IntakeLimits { max_chars: super::MAX_FIELD_CHARS, ..limits };
        Ok(Self {
            goal: input.goal,
            value,
            answers: input.answers,
            max_rounds,
            stop_after_failures,
            tolerance,
            limits,
            next: 0,
            seen: HashSet::new(),
            pending: None,
            log: Vec::new(),
            failures_in_row: 0,
            stop: None,
            checks: Vec::new(),
        })
    }

    /// The calls of the next round to execute, or `None` once replay has stopped. Every call
    /// returned must be answered by one [`Replay::record`].
    pub fn next_calls(&mut self) -> Option<Vec<ParsedCall>> {
        while self.stop.is_none() && self.pending.is_none() {
            let Some(answer) = self.answers.get(self.next).cloned() else {
                self.stop = Some(Stop::TranscriptEnded);
                break;
            };
            if self.log.len() >= self.max_rounds {
                self.stop = Some(Stop::MaxRounds);
                break;
            }
            self.next += 1;
            let round = self.log.len() + 1;
            match parse_answer(&answer, &self.limits) {
                Ok(parsed) => {
                    let keys: Vec<String> = parsed.calls.iter().map(call_key).collect();
                    if keys.iter().any(|k| self.seen.contains(k)) {
                        self.log.push(Round { round, calls: Vec::new(), intake_code: None, failed: false });
                        self.stop = Some(Stop::RepeatedCall);
                        break;
                    }
                    self.seen.extend(keys);
                    self.pending = Some(parsed.calls);
                }
                Err(r) if r.code == Code::UnparseableAnswer => {
                    self.log.push(Round { round, calls: Vec::new(), intake_code: None, failed: false });
                    self.checks = compare(&references(self.goal, self.value), &answer, self.tolerance);
                    self.stop = Some(Stop::FinalAnswer);
                }
                Err(r) => {
                    self.log.push(Round { round, calls: Vec::new(), intake_code: Some(r.code), failed: true });
                    self.count_failure(true);
                }
            }
        }
        self.pending.clone()
    }

    /// The outcomes of the calls last handed out, in order.
    pub fn record(&mut self, calls: Vec<LoopCall>) {
        self.pending = None;
        let failed = calls.iter().any(|c| !c.ok);
        let round = self.log.len() + 1;
        self.log.push(Round { round, calls, intake_code: None, failed });
        self.count_failure(failed);
    }

    fn count_failure(&mut self, failed: bool) {
        self.failures_in_row = if failed { self.failures_in_row + 1 } else { 0 };
        if self.failures_in_row >= self.stop_after_failures {
            self.stop = Some(Stop::ConsecutiveFailures);
        }
    }

    /// The report; call after [`Replay::next_calls`] returned `None`.
    pub fn finish(self) -> LoopReport {
        let stop = self.stop.unwrap_or(Stop::TranscriptEnded);
        let tool_calls = self.log.iter().map(|r| r.calls.len()).sum();
        let failed_calls = self.log.iter().flat_map(|r| &r.calls).filter(|c| !c.ok).count();
        let mut reasons = Vec::new();
        let references = if stop == Stop::FinalAnswer {
            self.checks
        } else {
            reasons.push(format!("stopped before a final answer: {}", stop_name(stop)));
            references(self.goal, self.value)
                .into_iter()
                .map(|reference| ReferenceCheck { reference, found: None, ok: false })
                .collect()
        };
        for c in references.iter().filter(|c| !c.ok && stop == Stop::FinalAnswer) {
            reasons.push(format!("the final answer does not state {} = {}", c.reference.name, c.reference.value));
        }
        LoopReport {
            verdict: Outcome::of(&reasons),
            goal: self.goal,
            value: self.value,
            rounds: self.log.len(),
            tool_calls,
            failed_calls,
            stop,
            unused_answers: self.answers.len().saturating_sub(self.next),
            references,
            round_log: self.log,
            reasons,
        }
    }
}

/// Stable name of a stop.
pub const fn stop_name(stop: Stop) -> &'static str {
    match stop {
        Stop::FinalAnswer => "final_answer",
        Stop::MaxRounds => "max_rounds",
        Stop::RepeatedCall => "repeated_call",
        Stop::ConsecutiveFailures => "consecutive_failures",
        Stop::TranscriptEnded => "transcript_ended",
    }
}

/// A call's identity for repeat detection: tool and RFC 8785 arguments.
fn call_key(call: &ParsedCall) -> String {
    let args = serde_json_canonicalizer::to_string(&call.arguments).unwrap_or_else(|_| call.arguments.to_string());
    format!("{}\u{1f}{args}", call.tool)
}

/// A number in an answer with its unit, if it had one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantity {
    /// The number as written.
    pub value: f64,
    /// Its unit (lowercase canonical: `mm`, `cm`, `m`, `km`, `n`, `kn`, `kgf`), if any.
    pub unit: Option<&'static str>,
}

// INVARIANT: a literal pattern that compiles; `None` would only find no numbers.
static NUMBER: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)\s*",
        r"(mm|밀리미터|cm|센티미터|km|킬로미터|kgf|킬로그램힘|kn|킬로뉴턴|m|미터|n|뉴턴)?(?:[^a-z]|$)"
    ))
    .ok()
});

/// Every number in `text` with its unit.
pub fn quantities(text: &str) -> Vec<Quantity> {
    let lower = text.to_lowercase();
    let Some(re) = NUMBER.as_ref() else { return Vec::new() };
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(c) = re.captures_at(&lower, at) {
        let (Some(whole), Some(num)) = (c.get(0), c.get(1)) else { break };
        let unit = c.get(2).map(|u| match u.as_str() {
            "mm" | "밀리미터" => "mm",
            "cm" | "센티미터" => "cm",
            "km" | "킬로미터" => "km",
            "kgf" | "킬로그램힘" => "kgf",
            "kn" | "킬로뉴턴" => "kn",
            "m" | "미터" => "m",
            _ => "n",
        });
        if let Ok(value) = num.as_str().replace(',', "").parse::<f64>() {
            out.push(Quantity { value, unit });
        }
        // Continue after the number and unit, not after the lookahead character.
        at = c.get(2).map_or(num.end(), |u| u.end()).max(whole.start() + 1);
    }
    out
}

/// Each reference and the first number of `answer` that states it within `tolerance`.
pub fn compare(refs: &[Reference], answer: &str, tolerance: f64) -> Vec<ReferenceCheck> {
    let found = quantities(answer);
    refs.iter()
        .map(|r| {
            let hit =
                found.iter().filter_map(|q| in_unit(q, r.measure)).find(|v| close(*v, r.value, r.measure, tolerance));
            ReferenceCheck { reference: r.clone(), found: hit, ok: hit.is_some() }
        })
        .collect()
}

/// `q` in the reference's unit, if it can be one.
fn in_unit(q: &Quantity, measure: Measure) -> Option<f64> {
    match (measure, q.unit) {
        (Measure::Count, None) => Some(q.value),
        (Measure::LengthMm, None | Some("mm")) => Some(q.value),
        (Measure::LengthMm, Some("cm")) => Some(q.value * 10.0),
        (Measure::LengthMm, Some("m")) => Some(q.value * 1000.0),
        (Measure::LengthMm, Some("km")) => Some(q.value * 1_000_000.0),
        (Measure::ForceN, None | Some("n")) => Some(q.value),
        (Measure::ForceN, Some("kn")) => Some(q.value * 1000.0),
        _ => None,
    }
}

fn close(got: f64, want: f64, measure: Measure, tolerance: f64) -> bool {
    match measure {
        Measure::Count => got == want,
        _ => (got - want).abs() <= tolerance * want.abs().max(f64::MIN_POSITIVE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_match_the_seed() {
        let values = |goal, v| references(goal, v).iter().map(|r| r.value).collect::<Vec<_>>();
        assert_eq!(values(Goal::Guardrail, 150.0), [2.0, 500.0]);
        assert_eq!(values(Goal::Scaffold, 20.0), [12.0, 1818.18]);
        assert_eq!(values(Goal::Force, 100.0), [980.665]);
        assert_eq!(values(Goal::Guardrail, 100.0), [1.0, 500.0]);
    }

    #[test]
    fn quantities_read_units_and_korean_counters() {
        let q = quantities("중간 난간대 2단, 간격 50 cm (500mm), 1.85m, 1,818.18 mm, 980.665 N, 100 kgf");
        let got: Vec<(f64, Option<&str>)> = q.iter().map(|q| (q.value, q.unit)).collect();
        assert_eq!(
            got,
            [
                (2.0, None),
                (50.0, Some("cm")),
                (500.0, Some("mm")),
                (1.85, Some("m")),
                (1818.18, Some("mm")),
                (980.665, Some("n")),
                (100.0, Some("kgf"))
            ]
        );
    }
}
