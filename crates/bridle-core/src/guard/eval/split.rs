//! Evaluation that predicts held-out behaviour: the learned detector trained without the texts it
//! is measured on, reported per family and language beside the rules alone.
//!
//! - [`random`]: trained on the `Train` and `Valid` parts of every source, thresholds chosen by
//!   cross-validation on them ([`crate::guard::model::train::fit_cross`], as the shipped model),
//!   measured on `Test` (the fixed hash split of [`crate::guard::model::train::part`]).
//! - [`leave_one_source_out`]: for each source, trained and thresholded the same way on every
//!   other source, measured on the whole left-out source.
//!
//! Every row counts the texts blocked by the rules, by the model alone (at the document threshold,
//! the channel `bridle guard scan` uses) and by the combined decision.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Sample, families};
use crate::guard::Detector;
use crate::guard::combine::{self, Thresholds};
use crate::guard::model::Model;
use crate::guard::model::train::{self, Params, Part, Source, Stats};

/// Counts for one `family/lang` row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Row {
    /// Texts.
    pub total: usize,
    /// Blocked by the rules.
    pub rules: usize,
    /// Blocked by the model alone.
    pub model: usize,
    /// Blocked by the combined decision.
    pub combined: usize,
}

/// One measured fold.
#[derive(Debug, Clone, Serialize)]
pub struct Fold {
    /// What was measured (`test`, or the left-out source).
    pub name: String,
    /// Thresholds chosen for this fold.
    pub thresholds: Thresholds,
    /// Training counts.
    pub stats: Stats,
    /// Rows `family` and `family/lang`.
    pub rows: BTreeMap<String, Row>,
    /// Benign texts the combined decision blocked (id, whether the model did), for review.
    pub false_positives: Vec<(String, bool)>,
    /// Every measured text's verdicts, in order (`bridle guard eval --split … --scores`).
    #[serde(skip)]
    pub scored: Vec<Scored>,
}

/// One measured text: what the rules said and the model's adjusted score, out of fold.
#[derive(Debug, Clone)]
pub struct Scored {
    /// The sample's id.
    pub id: String,
    /// `attack` or `benign`.
    pub label: String,
    /// The sample's category.
    pub category: String,
    /// The sample's language.
    pub lang: String,
    /// The text's length in bytes.
    pub bytes: usize,
    /// Whether the rules block it.
    pub rules: bool,
    /// The model's adjusted probability.
    pub model: f64,
}

/// What [`measure`] found.
pub struct Measured {
    /// Rows `family` and `family/lang`.
    pub rows: BTreeMap<String, Row>,
    /// Benign texts blocked (id, whether the model did).
    pub false_positives: Vec<(String, bool)>,
    /// Every text's verdicts, in order.
    pub scored: Vec<Scored>,
}

/// Measures `samples` with `model` at `thresholds`.
pub fn measure(detector: &Detector, model: &Model, thresholds: &Thresholds, samples: &[&Sample]) -> Measured {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut false_positives = Vec::new();
    let mut scored = Vec::with_capacity(samples.len());
    for s in samples {
        let fams = families(s);
        if fams.is_empty() {
            continue;
        }
        let (rules, p) = combine::both(detector, model, &s.text);
        let by_rules = rules.blocked();
        scored.push(Scored {
            id: s.id.clone(),
            label: s.label.clone(),
            category: s.category.clone(),
            lang: s.lang.clone(),
            bytes: s.text.len(),
            rules: by_rules,
            model: p,
        });
        let by_model = combine::model_may_block(s.text.len()) && p >= thresholds.document;
        if s.label == "benign" && (by_rules || by_model) {
            false_positives.push((s.id.clone(), by_model));
        }
        for f in fams {
            for key in [f.to_owned(), format!("{f}/{}", s.lang)] {
                let r = rows.entry(key).or_default();
                r.total += 1;
                r.rules += usize::from(by_rules);
                r.model += usize::from(by_model);
                r.combined += usize::from(by_rules || by_model);
            }
        }
    }
    Measured { rows, false_positives, scored }
}

fn pairs(sources: &[Source]) -> Vec<(&str, &Sample)> {
    sources.iter().flat_map(|src| src.samples.iter().map(move |s| (src.name.as_str(), s))).collect()
}

/// The random split: trained on `Train` and `Valid` with thresholds by cross-validation, as the
/// shipped model is; measured on `Test`.
pub fn random(detector: &Detector, sources: &[Source], params: &Params) -> Fold {
    let all = pairs(sources);
    let of = |want: Part| -> Vec<(&str, &Sample)> {
        all.iter().filter(|(n, s)| train::part(n, s) == want).copied().collect()
    };
    let seen: Vec<(&str, &Sample)> = all.iter().filter(|(n, s)| train::part(n, s) != Part::Test).copied().collect();
    let trained = train::fit_cross(detector, &seen, params);
    let test: Vec<&Sample> = of(Part::Test).into_iter().map(|(_, s)| s).collect();
    let Measured { rows, false_positives, scored } = measure(detector, &trained.model, &trained.thresholds, &test);
    Fold {
        name: "test".to_owned(),
        thresholds: trained.thresholds,
        stats: trained.stats,
        rows,
        false_positives,
        scored,
    }
}

/// Leave one source out: one fold per source, trained without it, measured on all of it.
pub fn leave_one_source_out(detector: &Detector, sources: &[Source], params: &Params) -> Vec<Fold> {
    let all = pairs(sources);
    let mut folds = Vec::new();
    for left in sources {
        let others: Vec<(&str, &Sample)> = all.iter().filter(|(n, _)| *n != left.name).copied().collect();
        let trained = train::fit_cross(detector, &others, params);
        let test: Vec<&Sample> = left.samples.iter().collect();
        let Measured { rows, false_positives, scored } = measure(detector, &trained.model, &trained.thresholds, &test);
        folds.push(Fold {
            name: left.name.clone(),
            thresholds: trained.thresholds,
            stats: trained.stats,
            rows,
            false_positives,
            scored,
        });
    }
    folds
}
