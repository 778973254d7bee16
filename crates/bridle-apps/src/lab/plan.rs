//! The planning lab's reader and checks: numbered lists (`1.`, `1)`, `1단계:`, `Step 1:`),
//! bullet lists (`-`, `*`, `•`, `·`), step headings (`### …`) and JSON plans (an array, or an
//! object holding one, bare or in a fenced block) become steps; then the step count, duplicate
//! titles, numbering gaps and the five elements of a work plan in each step are checked.
//!
//! The five elements, each with its Korean and English word list ([`ELEMENTS`]): method
//! (방법·순서·절차), hazard (위험·유해·추락…), safety measure (조치·대책·보호구…), equipment
//! (장비·기계·자재…) and responsibility (담당·책임·감독…). A step mentions an element when its
//! text contains any of the element's words (case-insensitive substring).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use bridle_core::Rejection;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Outcome, check_field, check_steps};

/// One of the five elements of a work plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Element {
    /// How the work is done, in what order (작업 방법·순서).
    Method,
    /// What can go wrong (위험 요인).
    Hazard,
    /// What prevents it (안전 조치).
    Measure,
    /// Machines, tools and materials (장비·자재).
    Equipment,
    /// Who does or supervises it (담당자).
    Responsible,
}

/// Each element with its words (Korean, then English; matched lowercase as substrings).
pub const ELEMENTS: [(Element, &[&str]); 5] = [
    (
        Element::Method,
        &["방법", "순서", "절차", "요령", "공법", "method", "procedure", "sequence", "process", "approach"],
    ),
    (
        Element::Hazard,
        &[
            "위험",
            "유해",
            "추락",
            "낙하",
            "붕괴",
            "전도",
            "협착",
            "감전",
            "침하",
            "결함",
            "누락",
            "hazard",
            "risk",
            "danger",
            "fall",
            "crush",
            "collapse",
            "defect",
            "trip",
            "settlement",
        ],
    ),
    (
        Element::Measure,
        &[
            "조치",
            "대책",
            "보호구",
            "안전대",
            "통제",
            "예방",
            "measure",
            "control",
            "precaution",
            "prevent",
            "protect",
            "harness",
            "barrier",
            "mitigat",
        ],
    ),
    (
        Element::Equipment,
        &[
            "장비",
            "기계",
            "자재",
            "공구",
            "도구",
            "크레인",
            "지게차",
            "equipment",
            "machine",
            "material",
            "tool",
            "crane",
            "forklift",
        ],
    ),
    (
        Element::Responsible,
        &[
            "담당",
            "책임",
            "감독",
            "관리자",
            "소장",
            "반장",
            "작업자",
            "responsible",
            "owner",
            "supervisor",
            "foreman",
            "manager",
            "lead",
            "crew",
        ],
    ),
];

/// The elements `text` mentions.
pub fn elements_in(text: &str) -> Vec<Element> {
    let lower = text.to_lowercase();
    ELEMENTS.iter().filter(|(_, words)| words.iter().any(|w| lower.contains(w))).map(|(e, _)| *e).collect()
}

/// How the plan was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanFormat {
    /// `1.`, `1)`, `1단계:`, `Step 1:` lines.
    Numbered,
    /// `-`, `*`, `•`, `·` lines.
    Bullets,
    /// Markdown headings, one per step.
    Headings,
    /// A JSON array of steps, or an object holding one.
    Json,
}

/// One step read from a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// The number written before it, if any.
    pub number: Option<u32>,
    /// Its title (the head of its first line, before `:` or ` - `).
    pub title: String,
    /// Its whole text (title line and body).
    pub text: String,
}

/// A plan read into steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// How it was written.
    pub format: PlanFormat,
    /// Its steps, in order.
    pub steps: Vec<PlanStep>,
}

/// The elements of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCheck {
    /// Step number as written, or its position (1-based).
    pub number: u32,
    /// Title.
    pub title: String,
    /// Elements it mentions.
    pub elements: Vec<Element>,
    /// Elements it does not.
    pub missing: Vec<Element>,
}

/// What `bridle lab plan` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanReport {
    /// `pass` when every rule held.
    pub verdict: Outcome,
    /// How the plan was written.
    pub format: PlanFormat,
    /// Steps requested.
    pub requested_steps: usize,
    /// Steps read.
    pub step_count: usize,
    /// Numbers missing from the written sequence 1..=max.
    pub numbering_gaps: Vec<u32>,
    /// Titles that appear more than once (compared without case and extra spaces).
    pub duplicate_titles: Vec<String>,
    /// Each step's elements.
    pub steps: Vec<StepCheck>,
    /// Why it failed, one line per broken rule.
    pub reasons: Vec<String>,
}

/// Reads `text` into steps and checks them against `requested` steps.
pub fn check_plan(text: &str, requested: usize) -> Result<PlanReport, Rejection> {
    check_steps(requested)?;
    let plan = read_plan(text)?;
    Ok(review(&plan, requested))
}

/// Reads `text` into steps; `None` steps is not an error (an empty plan fails its checks).
pub fn read_plan(text: &str) -> Result<Plan, Rejection> {
    check_field("plan", text)?;
    if let Some(steps) = json_steps(text) {
        return Ok(Plan { format: PlanFormat::Json, steps });
    }
    Ok(line_steps(text))
}

/// The checks of a read plan.
pub fn review(plan: &Plan, requested: usize) -> PlanReport {
    let mut reasons = Vec::new();
    let step_count = plan.steps.len();
    if step_count != requested {
        reasons.push(format!("{step_count} steps read; {requested} were requested"));
    }
    let numbers: Vec<u32> = plan.steps.iter().filter_map(|s| s.number).collect();
    let numbering_gaps = gaps(&numbers);
    if !numbering_gaps.is_empty() {
        let list: Vec<String> = numbering_gaps.iter().map(u32::to_string).collect();
        reasons.push(format!("step numbers missing: {}", list.join(", ")));
    }
    if numbers.windows(2).any(|w| matches!(w, [a, b] if b <= a)) {
        reasons.push("step numbers are not increasing".to_owned());
    }
    let duplicate_titles = duplicates(plan.steps.iter().map(|s| s.title.as_str()));
    for title in &duplicate_titles {
        reasons.push(format!("duplicate title `{title}`"));
    }
    let mut steps = Vec::with_capacity(step_count);
    for (i, step) in plan.steps.iter().enumerate() {
        let elements = elements_in(&step.text);
        let missing: Vec<Element> = ELEMENTS.iter().map(|(e, _)| *e).filter(|e| !elements.contains(e)).collect();
        let number = step.number.unwrap_or_else(|| u32::try_from(i + 1).unwrap_or(u32::MAX));
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|e| element_name(*e)).collect();
            reasons.push(format!("step {number} does not mention: {}", names.join(", ")));
        }
        steps.push(StepCheck { number, title: step.title.clone(), elements, missing });
    }
    PlanReport {
        verdict: Outcome::of(&reasons),
        format: plan.format,
        requested_steps: requested,
        step_count,
        numbering_gaps,
        duplicate_titles,
        steps,
        reasons,
    }
}

/// Stable name of an element.
pub const fn element_name(e: Element) -> &'static str {
    match e {
        Element::Method => "method",
        Element::Hazard => "hazard",
        Element::Measure => "measure",
        Element::Equipment => "equipment",
        Element::Responsible => "responsible",
    }
}

fn gaps(numbers: &[u32]) -> Vec<u32> {
    let Some(max) = numbers.iter().copied().max() else { return Vec::new() };
    // A plan of a few steps numbered up to a huge value is a typo, not thousands of gaps.
    let max = max.min(100);
    (1..=max).filter(|n| !numbers.contains(n)).collect()
}

fn duplicates<'a>(titles: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: BTreeMap<String, (usize, usize, &'a str)> = BTreeMap::new();
    for (i, title) in titles.enumerate() {
        let key = title.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        seen.entry(key).and_modify(|e| e.1 += 1).or_insert((i, 1, title));
    }
    let mut dups: Vec<(usize, &str)> =
        seen.into_values().filter(|(_, count, _)| *count > 1).map(|(i, _, t)| (i, t)).collect();
    dups.sort_unstable();
    dups.into_iter().map(|(_, t)| t.to_owned()).collect()
}

// ---- JSON plans ----

const TITLE_KEYS: [&str; 8] = ["title", "name", "step_title", "summary", "task", "제목", "단계명", "작업"];
const LIST_KEYS: [&str; 7] = ["steps", "plan", "tasks", "items", "단계", "계획", "작업계획"];
const NUMBER_KEYS: [&str; 4] = ["step", "number", "no", "id"];

fn json_steps(text: &str) -> Option<Vec<PlanStep>> {
    let value = json_candidates(text).into_iter().find_map(bridle_core::answer::read_json)?;
    let items = match &value {
        Value::Array(items) => items,
        Value::Object(map) => LIST_KEYS
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_array))
            .or_else(|| map.values().find_map(Value::as_array))?,
        _ => return None,
    };
    let steps: Vec<PlanStep> = items.iter().filter_map(json_step).collect();
    (!steps.is_empty()).then_some(steps)
}

/// The whole text, each fenced block, then the span from the first `[`/`{` line to the last
/// `]`/`}` line.
fn json_candidates(text: &str) -> Vec<&str> {
    let mut out = vec![text.trim()];
    let mut open: Option<usize> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            match open {
                None => open = Some(offset + line.len()),
                Some(start) => {
                    out.push(text.get(start..offset).unwrap_or_default());
                    open = None;
                }
            }
        }
        offset += line.len();
    }
    let first = text.find(['[', '{']);
    let last = text.rfind([']', '}']);
    if let (Some(a), Some(b)) = (first, last)
        && a < b
    {
        out.push(text.get(a..=b).unwrap_or_default());
    }
    out
}

fn json_step(item: &Value) -> Option<PlanStep> {
    match item {
        Value::String(s) => {
            let (number, title) = head(s);
            Some(PlanStep { number, title, text: s.clone() })
        }
        Value::Object(map) => {
            let mut text = String::new();
            collect_strings(item, &mut text);
            let number = NUMBER_KEYS.iter().find_map(|k| map.get(*k)).and_then(|v| {
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            });
            let titled = TITLE_KEYS.iter().find_map(|k| map.get(*k).and_then(Value::as_str));
            let title = match titled {
                Some(t) => t.trim().to_owned(),
                None => head(map.get("step").and_then(Value::as_str).unwrap_or(&text)).1,
            };
            Some(PlanStep { number, title, text })
        }
        _ => None,
    }
}

fn collect_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        // A key names what its value is (`"hazard": "falls"`): it is part of the step's text.
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push_str(k);
            out.push_str(": ");
            collect_strings(v, out);
        }),
        _ => {}
    }
}

// ---- line plans ----

// INVARIANT: literal patterns that compile; `None` would only make the reader find no steps.
static NUMBERED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^(?:\*\*)?(?:(\d{1,3})\s*[.)]\s+|(\d{1,3})\s*단계\s*[:.)]?\s*|(?i:step)\s*(\d{1,3})\s*[:.)-]?\s*)(.*)$",
    )
    .ok()
});
static BULLET: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[-*•·▪◦]\s+(.*)$").ok());
static HEADING: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^#{1,6}\s+(.*)$").ok());

/// A step start: its kind, number and the rest of the line.
fn start_of(line: &str) -> Option<(PlanFormat, Option<u32>, String)> {
    if let Some(c) = HEADING.as_ref().and_then(|r| r.captures(line)) {
        let rest = c.get(1).map_or("", |m| m.as_str());
        let (number, _) = head(rest);
        return Some((PlanFormat::Headings, number, rest.to_owned()));
    }
    if let Some(c) = NUMBERED.as_ref().and_then(|r| r.captures(line)) {
        let number = [1, 2, 3].iter().find_map(|i| c.get(*i)).and_then(|m| m.as_str().parse().ok());
        return Some((PlanFormat::Numbered, number, c.get(4).map_or("", |m| m.as_str()).to_owned()));
    }
    if let Some(c) = BULLET.as_ref().and_then(|r| r.captures(line)) {
        return Some((PlanFormat::Bullets, None, c.get(1).map_or("", |m| m.as_str()).to_owned()));
    }
    None
}

fn indent(line: &str) -> usize {
    line.chars().take_while(|c| *c == ' ' || *c == '\t').map(|c| if c == '\t' { 4 } else { 1 }).sum()
}

fn line_steps(text: &str) -> Plan {
    // The step kind and indentation are those of the first step start at the least indentation.
    let starts: Vec<(usize, PlanFormat)> =
        text.lines().filter_map(|l| start_of(l.trim_start()).map(|(kind, _, _)| (indent(l), kind))).collect();
    let Some(min_indent) = starts.iter().map(|(i, _)| *i).min() else {
        return Plan { format: PlanFormat::Numbered, steps: Vec::new() };
    };
    let kind = starts.iter().find(|(i, _)| *i == min_indent).map_or(PlanFormat::Numbered, |(_, k)| *k);
    let mut steps: Vec<PlanStep> = Vec::new();
    let mut after_blank = false;
    let mut ended = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            after_blank = true;
            continue;
        }
        let start = (indent(line) <= min_indent).then(|| start_of(line.trim_start())).flatten();
        match start {
            Some((k, number, rest)) if k == kind => {
                let (head_number, title) = head(&rest);
                steps.push(PlanStep { number: number.or(head_number), title, text: rest });
                ended = false;
            }
            _ => {
                // For lists, prose back at the margin after a blank line ends the last step.
                let epilogue = kind != PlanFormat::Headings && after_blank && indent(line) <= min_indent;
                ended |= epilogue;
                if let (Some(step), false) = (steps.last_mut(), ended) {
                    step.text.push('\n');
                    step.text.push_str(trimmed);
                }
            }
        }
        after_blank = false;
    }
    Plan { format: kind, steps }
}

/// The number and title of a step's first line: `**` and a leading `N.`/`N)`/`N단계`/`Step N`
/// dropped, then cut at the first `:`, ` - `, ` — ` or ` – `.
fn head(line: &str) -> (Option<u32>, String) {
    let first = line.lines().next().unwrap_or_default().replace("**", "");
    let mut rest = first.trim();
    let mut number = None;
    if let Some(c) = NUMBERED.as_ref().and_then(|r| r.captures(rest)) {
        number = [1, 2, 3].iter().find_map(|i| c.get(*i)).and_then(|m| m.as_str().parse().ok());
        rest = c.get(4).map_or(rest, |m| m.as_str());
    }
    let rest = rest.trim_start_matches([':', '.', '-', ' ']);
    let cut = [":", "：", " - ", " — ", " – "].iter().filter_map(|sep| rest.find(sep)).min().unwrap_or(rest.len());
    let title = rest.get(..cut).unwrap_or(rest).trim().trim_end_matches('.').trim();
    (number, title.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_drop_numbers_and_cut_at_separators() {
        assert_eq!(head("1단계: 작업 범위 확인"), (Some(1), "작업 범위 확인".to_owned()));
        assert_eq!(head("**Step 2 - Deliver**: by truck"), (Some(2), "Deliver".to_owned()));
        assert_eq!(head("자재 반입: 지게차"), (None, "자재 반입".to_owned()));
    }

    #[test]
    fn decimals_are_not_step_numbers() {
        assert!(start_of("1.85 m 간격으로 세운다").is_none());
    }

    #[test]
    fn gaps_and_duplicates() {
        assert_eq!(gaps(&[1, 2, 4, 6]), [3, 5]);
        assert_eq!(duplicates(["점검", "A", "점검 ", "a"].into_iter()), ["점검", "A"]);
    }
}
