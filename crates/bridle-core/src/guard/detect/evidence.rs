//! The evidence collected for one text: each rule's strongest hit, and the score, families and
//! spans they add up to (reported matches capped together, rules that count only beside an
//! instruction, rules whose block needs the model's agreement).

use std::collections::BTreeMap;

use super::super::rules;
use super::super::{BLOCK_SCORE, Category, Detection, GuardVerdict, Span};

/// One rule's strongest finding in a text.
#[derive(Clone, Copy, Debug)]
pub(super) struct Hit {
    pub(super) category: Category,
    pub(super) weight: f64,
    pub(super) start: usize,
    pub(super) end: usize,
    /// The words were quoted or reported (its weight is the rule's reported share already).
    pub(super) reported: bool,
}

/// One rule's counted finding in a text ([`super::Detector::explain`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RuleHit {
    /// The rule's name (`override_verb_object`, `ko_extract` …).
    pub rule: &'static str,
    /// Its family.
    pub category: Category,
    /// What it adds to the score (a quoted or reported match: its reduced share).
    pub weight: f64,
    /// The words were quoted or reported.
    pub reported: bool,
    /// First byte of the match in the input.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}

/// Most that quoted or reported matches add up to, together: below [`BLOCK_SCORE`], so a text
/// that only quotes or reports an attack (a test case, a training slide, an incident note) is
/// never blocked by the rules alone, however many rules read the quotation; the learned model and
/// any match that is not reported still count.
const REPORTED_CAP: f64 = 0.45;

/// Evidence collected for one text: strongest weight per rule, and where.
#[derive(Default)]
pub(super) struct Evidence {
    pub(super) hits: BTreeMap<&'static str, Hit>,
    /// Whether a rule of an instruction family matched text that quotes or reports it.
    pub(super) reported: bool,
    /// The input's canonical view (kept from the top-level scan for the learned model).
    pub(super) canonical: Option<String>,
}

/// What the combined decision reads from a detection besides its verdict.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// A rule of an instruction family matched words the text quotes or reports.
    pub reported: bool,
    /// The text's canonical view, as the model reads it.
    pub canonical: Option<String>,
    /// The rules block only by rules of [`rules::CORROBORATE`], and nothing the model cannot
    /// read (an encoding, invisible characters, delimiters, an obfuscation) was found: the block
    /// stands only if the model agrees ([`super::combine::both`]).
    pub needs_corroboration: bool,
}

impl Evidence {
    pub(super) fn add(&mut self, name: &'static str, category: Category, weight: f64, span: (usize, usize)) {
        self.put(name, Hit { category, weight, start: span.0, end: span.1, reported: false });
    }

    /// Keeps the stronger of `hit` and the rule's earlier hit.
    pub(super) fn put(&mut self, name: &'static str, hit: Hit) {
        let entry = self.hits.entry(name).or_insert(hit);
        if hit.weight > entry.weight {
            *entry = hit;
        }
    }

    /// The hits that count: a rule of [`rules::ONLY_WITH_INSTRUCTION`] counts only beside a hit
    /// of another rule of an instruction family (so `DEBUG=true` beside an encoded-looking token is
    /// still configuration text).
    pub(super) fn counted(&self) -> impl Iterator<Item = &Hit> {
        self.counted_named().map(|(_, h)| h)
    }

    /// [`Self::counted`], with each hit's rule name.
    pub(super) fn counted_named(&self) -> impl Iterator<Item = (&'static str, &Hit)> {
        let instructed = self.hits.iter().any(|(name, h)| {
            !rules::ONLY_WITH_INSTRUCTION.contains(name)
                && matches!(
                    h.category,
                    Category::InstructionOverride
                        | Category::RoleRedefinition
                        | Category::PromptExtraction
                        | Category::PrivilegeEscalation
                        | Category::Jailbreak
                )
        });
        self.hits
            .iter()
            .filter(move |(name, _)| instructed || !rules::ONLY_WITH_INSTRUCTION.contains(name))
            .map(|(name, h)| (*name, h))
    }

    /// Adds a hit of a rule table read in several languages (rule names start with their
    /// language, `es_…`): where a hit of the same family from another language already covers
    /// part of the span (the same words read by two languages' rules, "ignore … instructions"),
    /// the strongest weight counts once.
    pub(super) fn add_merged(&mut self, name: &'static str, hit: Hit) {
        let lang = |n: &str| n.split('_').next().unwrap_or_default().to_owned();
        let mine = lang(name);
        let overlapping = self.hits.iter_mut().find(|(n, h)| {
            h.category == hit.category
                && lang(n) != mine
                && h.start < hit.end.max(hit.start + 1)
                && hit.start < h.end.max(h.start + 1)
        });
        match overlapping {
            Some((_, h)) if hit.weight > h.weight => {
                (h.weight, h.reported) = (hit.weight, hit.reported);
            }
            Some(_) => {}
            None => self.put(name, hit),
        }
    }

    pub(super) fn score(&self) -> f64 {
        self.score_of(|_| true)
    }

    /// Whether the rules' `score` blocks only thanks to rules of [`rules::CORROBORATE`], with
    /// nothing the model is blind to among the hits.
    fn needs_corroboration(&self, score: f64) -> bool {
        let blind = self.counted().any(|h| {
            matches!(
                h.category,
                Category::EncodedPayload
                    | Category::InvisibleCharacters
                    | Category::Obfuscation
                    | Category::DelimiterInjection
                    | Category::ToolCallSmuggling
            )
        });
        !blind && score >= BLOCK_SCORE && self.score_of(|name| !rules::CORROBORATE.contains(&name)) < BLOCK_SCORE
    }

    /// The score of the counted hits of the rules `keep` accepts.
    fn score_of(&self, keep: impl Fn(&str) -> bool) -> f64 {
        let (mut direct, mut reported) = (0.0, 0.0);
        for (_, h) in self.counted_named().filter(|(name, _)| keep(name)) {
            if h.reported {
                reported += h.weight;
            } else {
                direct += h.weight;
            }
        }
        // `+ 0.0` turns the empty sum's -0.0 into 0.0.
        (direct + f64::min(reported, REPORTED_CAP) + 0.0).min(1.0)
    }

    pub(super) fn into_detection(mut self) -> (Detection, Signals) {
        let score = self.score();
        let signals = Signals {
            reported: self.reported,
            canonical: self.canonical.take(),
            needs_corroboration: self.needs_corroboration(score),
        };
        let mut categories: Vec<Category> = self.counted().map(|h| h.category).collect();
        categories.sort_unstable();
        categories.dedup();
        let mut spans: Vec<Span> =
            self.counted().map(|h| Span { start: h.start, end: h.end, category: h.category }).collect();
        spans.sort_unstable();
        spans.dedup();
        let verdict = if score >= BLOCK_SCORE { GuardVerdict::Block } else { GuardVerdict::Allow };
        (Detection { verdict, score: (score * 1000.0).round() / 1000.0, categories, spans }, signals)
    }
}

/// Adds `inner` (a decoded payload's evidence) to `ev`, every hit placed at `span` when given.
pub(super) fn merge(ev: &mut Evidence, inner: Evidence, span: Option<(usize, usize)>) {
    ev.reported |= inner.reported;
    for (name, hit) in inner.hits {
        let (start, end) = span.unwrap_or((hit.start, hit.end));
        ev.put(name, Hit { start, end, ..hit });
    }
}
