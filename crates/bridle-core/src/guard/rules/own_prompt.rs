//! The model's own instructions asked for in English without the usual verbs: a reference that
//! can only mean what the model was set up with ("your confidential instructions", "ur initial
//! prompt", "the exact settings you were initialized with", "the first sentence you were given
//! today"), whatever the framing around it (a poem, a riddle, a flag to capture, a dict for a unit
//! test). `reveal_prompt` in `rules.rs` needs a reveal verb within a few words; these need none,
//! because the reference itself is what no ordinary request makes.

use super::super::Category::*;
use super::{Rule, r};

/// Words that run the English table for these rules, beside its own keywords (which already hold
/// prompt, instruction, rules, guideline, secret and system).
pub(crate) const TRIGGERS: &[&str] =
    &["guardrail", "preamble", "directive", "briefing", "you were", "you got", "you've been", "you have been"];

/// The rules. A quoted "reveal your hidden instructions" is weighed by `reveal_prompt` already.
pub(crate) const OWN_PROMPT: &[Rule] = &[
    // A possessive and a word that marks the set-up text as hidden or original: "your secret
    // rules", "ur initial prompt", "your confidential instructions". "Your instructions" alone is
    // what a user tells the model to follow.
    r(
        "own_hidden_instructions",
        PromptExtraction,
        0.6,
        concat!(
            r"\b(?:your|ur|yr)\s+(?:own\s+|very\s+)?",
            r"(?:(?:full|entire|whole|exact|complete|original|initial|hidden|secret|confidential|internal|private|real|actual|underlying|starting|startup|boot|system|developer|operator|first|verbatim|literal|raw)[\s-]+){1,3}",
            r"(?:prompts?|instructions|rules|guidelines|directives|guardrails?|setup|set-up|configuration|config|brief|briefing|preamble|orders|programming|system\s+message)\b"
        ),
    )
    .silent_when_reported(),
    // What the model was given, named by how only a machine gets it ("the settings and secrets
    // you were initialized with", "the rules you were booted with") or as the first thing it was
    // given ("the very first sentence you were given"). "The settings you were given by IT" is
    // what one colleague writes to another.
    r(
        "what_you_were_given",
        PromptExtraction,
        0.6,
        concat!(
            r"\b(?:instructions|rules|guidelines|settings|secrets|prompt|text|sentences?|messages?|words|directives|config(?:uration)?|setup|guardrails?|constraints)\s+",
            r"(?:that\s+|which\s+)?you\s+(?:were|got|have\s+been|'ve\s+been)\s+",
            r"(?:initiali[sz]ed|configured|loaded|booted|programmed|fed|deployed|shipped|pre-?loaded)\b",
            r"|\bfirst\s+(?:sentence|message|words?|lines?|instructions?|text|thing)\s+(?:that\s+)?you\s+(?:were|got)\s+(?:given|told|sent|shown)\b"
        ),
    )
    .silent_when_reported(),
];
