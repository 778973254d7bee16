//! Seed 003's workbench labs beyond tool calling: prompt assembly (`prompt`), the agent-loop
//! replay rules and reference values (`loop_lab`), the plan reader (`plan`) and the
//! prompt-injection judge (`judge`), with the seed's limits and their codes.
//!
//! Pure and total: every function returns a report or a [`Rejection`] naming the limit that was
//! passed. Nothing here executes a tool but `replay`, which runs a loop's calls through the gate.
//! Nothing here stores pasted text either.

pub mod judge;
pub mod loop_lab;
pub mod plan;
pub mod prompt;
pub mod replay;

use std::ops::RangeInclusive;

use bridle_core::Code;
use bridle_core::Rejection;
use serde::{Deserialize, Serialize};

pub use judge::{JudgeReport, judge};
pub use plan::{PlanReport, check_plan};
pub use prompt::{injection_prompt, loop_prompt, plan_prompt, step_prompt};
pub use replay::{LabError, replay_loop};

/// Longest pasted field (an answer, a plan, a document), in Unicode scalar values.
pub const MAX_FIELD_CHARS: usize = 20_000;
/// Delimiter seeds accepted by the injection lab.
pub const SEEDS: RangeInclusive<u64> = 1..=999_999;
/// Round limits a loop may be given.
pub const MAX_ROUNDS: RangeInclusive<usize> = 1..=10;
/// Consecutive failed rounds after which a loop may be stopped.
pub const FAILURE_STOPS: RangeInclusive<usize> = 2..=3;
/// Step counts a plan may be asked for.
pub const STEP_COUNTS: [usize; 3] = [5, 6, 8];

/// Language of prompts, word lists and messages to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// Korean (the seed's first language).
    #[default]
    Ko,
    /// English.
    En,
}

impl Lang {
    /// Picks the Korean or the English text.
    pub const fn pick<'a>(self, ko: &'a str, en: &'a str) -> &'a str {
        match self {
            Self::Ko => ko,
            Self::En => en,
        }
    }
}

/// Refuses a pasted field longer than [`MAX_FIELD_CHARS`] with `field_too_long`.
pub fn check_field(name: &str, text: &str) -> Result<(), Rejection> {
    if text.len() <= MAX_FIELD_CHARS {
        return Ok(());
    }
    let chars = text.chars().count();
    if chars <= MAX_FIELD_CHARS {
        return Ok(());
    }
    Err(Rejection::new(
        Code::FieldTooLong,
        format!("`{name}` has `{chars}` characters; at most {MAX_FIELD_CHARS} are read"),
    )
    .with_detail(serde_json::json!({"field": name, "chars": chars, "max_chars": MAX_FIELD_CHARS})))
}

/// A delimiter seed in 1–999999, else `seed_out_of_range`.
pub fn check_seed(seed: u64) -> Result<u32, Rejection> {
    match u32::try_from(seed) {
        Ok(s) if SEEDS.contains(&seed) => Ok(s),
        _ => Err(Rejection::new(Code::SeedOutOfRange, format!("seed `{seed}` is outside 1–999999"))
            .with_detail(serde_json::json!({"seed": seed, "min": SEEDS.start(), "max": SEEDS.end()}))),
    }
}

/// A round limit in 1–10, else `too_many_rounds`.
pub fn check_max_rounds(rounds: usize) -> Result<usize, Rejection> {
    if MAX_ROUNDS.contains(&rounds) {
        return Ok(rounds);
    }
    Err(Rejection::new(Code::TooManyRounds, format!("max rounds `{rounds}` is outside 1–10"))
        .with_detail(serde_json::json!({"max_rounds": rounds, "min": MAX_ROUNDS.start(), "max": MAX_ROUNDS.end()})))
}

/// A consecutive-failure stop of 2 or 3, else `too_many_rounds` (it is a round limit).
pub fn check_failure_stop(rounds: usize) -> Result<usize, Rejection> {
    if FAILURE_STOPS.contains(&rounds) {
        return Ok(rounds);
    }
    Err(Rejection::new(Code::TooManyRounds, format!("stop after `{rounds}` failed rounds is outside 2–3"))
        .with_detail(serde_json::json!({"stop_after_failures": rounds, "allowed": [2, 3]})))
}

/// A requested step count of 5, 6 or 8, else `step_count_invalid`.
pub fn check_steps(steps: usize) -> Result<usize, Rejection> {
    if STEP_COUNTS.contains(&steps) {
        return Ok(steps);
    }
    Err(Rejection::new(Code::StepCountInvalid, format!("`{steps}` steps requested; a plan has 5, 6 or 8"))
        .with_detail(serde_json::json!({"steps": steps, "allowed": STEP_COUNTS})))
}

/// Pass or fail of a lab's rule-based check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every rule held.
    Pass,
    /// At least one rule failed; the report's reasons say which.
    Fail,
}

impl Outcome {
    /// `pass` when `reasons` is empty.
    pub fn of(reasons: &[String]) -> Self {
        if reasons.is_empty() { Self::Pass } else { Self::Fail }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_have_their_codes() {
        assert!(check_field("answer", &"가".repeat(MAX_FIELD_CHARS)).is_ok());
        let long = check_field("answer", &"가".repeat(MAX_FIELD_CHARS + 1)).err().map(|r| r.code);
        assert_eq!(long, Some(Code::FieldTooLong));
        assert_eq!(check_seed(1).ok(), Some(1));
        assert_eq!(check_seed(999_999).ok(), Some(999_999));
        for bad in [0, 1_000_000, u64::MAX] {
            assert_eq!(check_seed(bad).err().map(|r| r.code), Some(Code::SeedOutOfRange));
        }
        assert!(check_max_rounds(1).is_ok() && check_max_rounds(10).is_ok());
        assert_eq!(check_max_rounds(11).err().map(|r| r.code), Some(Code::TooManyRounds));
        assert_eq!(check_max_rounds(0).err().map(|r| r.code), Some(Code::TooManyRounds));
        assert_eq!(check_failure_stop(4).err().map(|r| r.code), Some(Code::TooManyRounds));
        assert!(check_steps(8).is_ok());
        assert_eq!(check_steps(7).err().map(|r| r.code), Some(Code::StepCountInvalid));
    }
}
