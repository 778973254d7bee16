//! Rules whose block needs the learned model's agreement. Each reads an instruction family in
//! words that ordinary text uses too (a Korean or Chinese "reveal", a German "override", "no
//! restrictions", "secret"), so on its own it blocks security training, policies and runbooks as
//! often as attacks the model cannot see. A text these rules alone bring to
//! [`super::super::BLOCK_SCORE`] is blocked only when the model's adjusted score reaches
//! [`super::super::combine::CORROBORATION`] as well ([`super::super::combine::both`]).
//!
//! Chosen from the training writers' out-of-fold scores (`bridle guard eval --split loso
//! --scores`, BENCHMARKS.md, stop 49): the rules whose rules-only blocks under that score were
//! benign texts at least three times as often as attacks, and at least three times. The rules
//! that the shared corpus's attacks lean on with a low model score (`override_verb_object`,
//! `just_print_quoted`, `reveal_prompt`, …) are not among them, and a block that also holds an
//! encoded payload, invisible characters, delimiters or an obfuscation stands on the rules alone
//! (the model cannot read those). `reveal_its_prompt` (stop 50) was split from `reveal_prompt`
//! and listed on the training writers' counts of its matches (36 benign texts, 14 attacks).

/// Rule names (of every table) whose block needs the model's agreement.
pub(crate) const CORROBORATE: &[&str] = &[
    "admin_mode_on",
    "de_override",
    "de_reveal",
    "doc_addressed_de",
    "doc_addressed_es",
    "doc_addressed_instruction_ko",
    "doc_machine_reader_ko",
    "doc_reader_ja",
    "es_override",
    "es_reveal",
    "fr_disable",
    "fr_reveal",
    "ja_disable",
    "ja_no_limits",
    "ja_override",
    "ja_reveal",
    "ja_secret",
    "ja_send_data",
    "jailbreak_word",
    "ko_admin_mode_on",
    "ko_extract",
    "ko_mode",
    "ko_override",
    "ko_privileged_request",
    "ko_secret",
    "ko_send_data",
    "koen_dont_care",
    "no_restrictions",
    "own_hidden_instructions",
    "reveal_its_prompt",
    "secret_request",
    "zh_no_limits",
    "zh_override",
    "zh_reveal",
    "zh_role",
];
