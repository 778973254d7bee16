//! Line-oriented structure in an answer: fenced code blocks (``` and ~~~, with or without a
//! language tag) and ReAct lines (`Action: tool` followed by `Action Input: {...}`).
//!
//! Both walk the text once; every region they return is disjoint from the others.

use super::scan::Pair;

/// Lines of `text` with their byte offsets, without the line break.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |raw| {
        let start = at;
        at += raw.len();
        (start, raw.trim_end_matches(['\n', '\r']))
    })
}

/// A fence marker: its character and run length, if `line` (indented by at most 3 spaces)
/// starts with three or more backticks or tildes.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = line.get(indent..)?;
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.len() - rest.trim_start_matches(c).len();
    (run >= 3).then(|| (c, run, rest.get(run..).unwrap_or_default()))
}

/// The contents of every fenced block (the text between its fence lines, trimmed). An
/// unclosed fence runs to the end of the text.
pub(super) fn fenced_blocks(text: &str) -> Vec<Pair> {
    let mut blocks = Vec::new();
    let mut open: Option<(char, usize, usize)> = None; // (char, run, content start)
    for (start, line) in lines(text) {
        match open {
            None => {
                if let Some((c, run, info)) = fence(line)
                    && !(c == '`' && info.contains('`'))
                {
                    open = Some((c, run, start + line.len()));
                }
            }
            Some((c, run, from)) => {
                if let Some((c2, run2, rest)) = fence(line)
                    && c2 == c
                    && run2 >= run
                    && rest.trim().is_empty()
                {
                    blocks.extend(trimmed(text, from, start));
                    open = None;
                }
            }
        }
    }
    if let Some((_, _, from)) = open {
        blocks.extend(trimmed(text, from, text.len()));
    }
    blocks
}

/// `text[from..to]` without surrounding white space, as a span; `None` if empty.
fn trimmed(text: &str, from: usize, to: usize) -> Option<Pair> {
    let slice = text.get(from..to)?;
    let lead = slice.len() - slice.trim_start().len();
    let body = slice.trim();
    (!body.is_empty()).then_some(Pair { start: from + lead, end: from + lead + body.len() })
}

/// A ReAct step: the tool named on the `Action:` line, the span of the `Action Input:` text
/// (up to the next ReAct keyword line), and where the step starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ReactStep {
    pub tool: String,
    pub input: Pair,
    pub start: usize,
}

/// `line` without a leading keyword (case-insensitive, ignoring `*` emphasis and indentation).
fn after_keyword<'a>(line: &'a str, keyword: &str) -> Option<&'a str> {
    let bare = line.trim_start().trim_start_matches('*');
    let head = bare.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    Some(bare.get(keyword.len()..)?.trim_start_matches('*'))
}

fn is_keyword_line(line: &str) -> bool {
    ["Action:", "Action Input:", "Observation:", "Thought:", "Final Answer:"]
        .iter()
        .any(|k| after_keyword(line, k).is_some())
}

/// Every `Action:` line followed (after blank lines) by an `Action Input:` line.
pub(super) fn react_steps(text: &str) -> Vec<ReactStep> {
    let mut steps = Vec::new();
    let mut action: Option<(String, usize)> = None;
    let mut input: Option<(String, usize, usize, usize)> = None; // tool, step start, input start, end
    for (start, line) in lines(text) {
        if let Some((tool, step, from, _)) = input.take() {
            if is_keyword_line(line) {
                steps.extend(step_of(text, tool, step, from, start));
            } else {
                input = Some((tool, step, from, start + line.len()));
                continue;
            }
        }
        if let Some(rest) = after_keyword(line, "Action Input:") {
            if let Some((tool, step)) = action.take() {
                let from = start + (line.len() - rest.len());
                input = Some((tool, step, from, start + line.len()));
            }
            continue;
        }
        if let Some(rest) = after_keyword(line, "Action:") {
            let tool = rest.trim().trim_matches(|c| c == '`' || c == '"' || c == '\'' || c == '*').trim();
            let indent = line.len() - line.trim_start().len();
            action = (!tool.is_empty()).then(|| (tool.to_owned(), start + indent));
            continue;
        }
        if !line.trim().is_empty() {
            action = None;
        }
    }
    if let Some((tool, step, from, _)) = input {
        steps.extend(step_of(text, tool, step, from, text.len()));
    }
    steps
}

fn step_of(text: &str, tool: String, start: usize, from: usize, to: usize) -> Option<ReactStep> {
    Some(ReactStep { tool, input: trimmed(text, from, to)?, start })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(text: &str) -> Vec<&str> {
        fenced_blocks(text).iter().filter_map(|p| text.get(p.start..p.end)).collect()
    }

    #[test]
    fn fences_of_both_kinds_with_and_without_tags() {
        let t = "a\n```json\n{\"a\": 1}\n```\nb\n~~~\n[2]\n~~~~\n````\n``` not a close\n````\n";
        assert_eq!(blocks(t), ["{\"a\": 1}", "[2]", "``` not a close"]);
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        assert_eq!(blocks("x\n```\n{\"a\": 1}\n"), ["{\"a\": 1}"]);
    }

    #[test]
    fn react_steps_pair_action_and_input() {
        let t = "Thought: add\nAction: `calculate`\nAction Input: {\"expression\": \"1+1\"}\nObservation: 2\n\
                 Action: convert_unit\n\nAction Input:\n{\"value\": 1,\n \"from\": \"m\", \"to\": \"cm\"}\n";
        let steps = react_steps(t);
        assert_eq!(steps.len(), 2);
        assert_eq!(steps.first().map(|s| s.tool.as_str()), Some("calculate"));
        let input = steps.get(1).and_then(|s| t.get(s.input.start..s.input.end));
        assert_eq!(input, Some("{\"value\": 1,\n \"from\": \"m\", \"to\": \"cm\"}"));
    }

    #[test]
    fn an_action_without_input_is_not_a_step() {
        assert!(react_steps("Action: calculate\nsome prose\nAction Input: {}").is_empty());
    }
}
