//! The replay report (`bridle replay --report`) as one self-contained HTML page: agreement per
//! agent as an inline SVG bar chart drawn here, and a table of every disagreement. No scripts,
//! fonts or external files.

use std::fmt::Write as _;

use bridle_runtime::replay::{AbReport, ReplayReport};

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem;color:#1b1f24}\
table{border-collapse:collapse;width:100%;font-size:.9rem}td,th{border:1px solid #ccd;padding:.3rem .5rem;\
text-align:left;vertical-align:top}th{background:#eef}code{font-size:.85rem;word-break:break-all}\
.bad{color:#a40000}";

/// One bar group per agent: the rate of each report (A, then B).
fn chart(series: &[(&str, &ReplayReport)]) -> String {
    let agents: Vec<&str> =
        series.first().map(|(_, r)| r.agents.iter().map(|a| a.agent.as_str()).collect()).unwrap_or_default();
    let (bar, gap, left) = (22_usize, 14_usize, 150_usize);
    let group = bar * series.len() + gap;
    let height = agents.len() * group + 40;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"{height}\" role=\"img\" \
         aria-label=\"agreement per agent\">"
    );
    let colors = ["#3558a8", "#c06a12"];
    for (i, agent) in agents.iter().enumerate() {
        let y0 = 20 + i * group;
        let _ = write!(svg, "<text x=\"0\" y=\"{}\" font-size=\"13\">{}</text>", y0 + bar - 6, esc(agent));
        for (j, (label, report)) in series.iter().enumerate() {
            let rate =
                report.agents.iter().find(|a| a.agent == *agent).map_or(0.0, bridle_core::replay::AgentAgreement::rate);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let width = (rate * 400.0).round() as usize;
            let y = y0 + j * bar;
            let color = colors.get(j).copied().unwrap_or("#555");
            let _ = write!(
                svg,
                "<rect x=\"{left}\" y=\"{y}\" width=\"{width}\" height=\"{}\" fill=\"{color}\"/>\
                 <text x=\"{}\" y=\"{}\" font-size=\"12\">{} {:.1}%</text>",
                bar - 4,
                left + width + 6,
                y + bar - 8,
                esc(label),
                rate * 100.0
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

fn disagreements(report: &ReplayReport) -> String {
    let mut rows = String::new();
    for item in report.disagreements() {
        let why = match (&item.comparison, &item.error) {
            (_, Some(e)) => esc(e),
            (Some(c), None) => esc(&c.differences.join("; ")),
            (None, None) => String::new(),
        };
        let _ = write!(
            rows,
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"bad\">{why}</td></tr>",
            esc(&item.decision_id),
            esc(&item.agent)
        );
    }
    if rows.is_empty() {
        return "<p>Every decision agreed.</p>".to_owned();
    }
    format!("<table><tr><th>decision</th><th>agent</th><th>what differed</th></tr>{rows}</table>")
}

fn summary(report: &ReplayReport) -> String {
    let mut rows = String::new();
    for a in &report.agents {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{} ({:.1}%)</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&a.agent),
            a.total,
            a.agree,
            a.rate() * 100.0,
            a.action,
            a.parameters,
            a.verdict,
            a.errors
        );
    }
    format!(
        "<table><tr><th>agent</th><th>decisions</th><th>agree</th><th>same action</th><th>same parameters</th>\
         <th>same verdict</th><th>errors</th></tr>{rows}</table>"
    )
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style>\
         </head><body><h1>{}</h1>{body}</body></html>\n",
        esc(title),
        esc(title)
    )
}

/// The page of one replay.
pub fn report_page(report: &ReplayReport) -> String {
    let body = format!(
        "<p>Model <code>{}</code>: {} of {} decisions agree ({:.1}%).</p>{}{}<h2>Disagreements</h2>{}",
        esc(&report.model),
        report.agree,
        report.total,
        report.rate() * 100.0,
        chart(&[("", report)]),
        summary(report),
        disagreements(report)
    );
    page("Bridle replay", &body)
}

/// The page of an A/B replay.
pub fn ab_page(ab: &AbReport) -> String {
    let body = format!(
        "<p>A <code>{}</code>: {}/{} agree with the record; B <code>{}</code>: {}/{}; A and B agree with each \
         other on {}.</p>{}<h2>A</h2>{}<h3>Disagreements</h3>{}<h2>B</h2>{}<h3>Disagreements</h3>{}",
        esc(&ab.a.model),
        ab.a.agree,
        ab.a.total,
        esc(&ab.b.model),
        ab.b.agree,
        ab.b.total,
        ab.a_b_agree,
        chart(&[("A", &ab.a), ("B", &ab.b)]),
        summary(&ab.a),
        disagreements(&ab.a),
        summary(&ab.b),
        disagreements(&ab.b)
    );
    page("Bridle replay: A/B", &body)
}
