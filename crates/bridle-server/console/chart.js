// Inline SVG charts and MathML formulas, built element by element (no library, no markup strings).

const SVG = 'http://www.w3.org/2000/svg';
const MATHML = 'http://www.w3.org/1998/Math/MathML';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// A CUSUM chart: S⁺ and S⁻ per value, with the warning and critical thresholds as lines.
export function cusumChart(trace, warning, critical, title) {
  const W = 640; const H = 220; const L = 40; const R = 10; const T = 12; const B = 26;
  const maxY = Math.max(critical * 1.15, ...trace.map((p) => Math.max(p.upper, p.lower)), 1);
  const first = trace.length ? trace[0].index : 0;
  const last = trace.length ? trace[trace.length - 1].index : 1;
  const span = Math.max(last - first, 1);
  const x = (i) => L + ((i - first) / span) * (W - L - R);
  const y = (v) => T + (1 - v / maxY) * (H - T - B);
  const line = (key) => trace.map((p, i) => `${i ? 'L' : 'M'}${x(p.index).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ');
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title, preserveAspectRatio: 'xMidYMid meet' },
    s('title', {}, title),
    s('line', { class: 'axis', x1: L, y1: y(0), x2: W - R, y2: y(0) }),
    s('line', { class: 'axis', x1: L, y1: T, x2: L, y2: y(0) }),
    s('line', { class: 'warning', x1: L, y1: y(warning), x2: W - R, y2: y(warning) }),
    s('line', { class: 'critical', x1: L, y1: y(critical), x2: W - R, y2: y(critical) }),
    s('text', { x: 2, y: y(warning) + 4 }, `h=${warning}`),
    s('text', { x: 2, y: y(critical) + 4 }, `h=${critical}`),
    s('text', { x: L, y: H - 6 }, String(first)),
    s('text', { x: W - R - 30, y: H - 6 }, String(last)));
  if (trace.length) {
    svg.append(s('path', { class: 'upper', d: line('upper') }), s('path', { class: 'lower', d: line('lower') }));
  }
  return svg;
}

export function mm(tag, ...children) {
  const el = document.createElementNS(MATHML, tag);
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// S⁺ₙ = max(0, S⁺ₙ₋₁ + zₙ − k), S⁻ₙ = max(0, S⁻ₙ₋₁ − zₙ − k), zₙ = (xₙ − μ) / σ.
export function cusumFormula() {
  const sub = (base, sup, idx) => mm('msubsup', mm('mi', base), mm('mi', idx), mm('mo', sup));
  const row = (sign, idx) => mm('mrow',
    sub('S', sign, 'n'), mm('mo', '='), mm('mi', 'max'), mm('mo', '('), mm('mn', '0'), mm('mo', ','),
    sub('S', sign, 'n−1'), mm('mo', sign === '+' ? '+' : '−'), mm('msub', mm('mi', 'z'), mm('mi', idx)),
    mm('mo', '−'), mm('mi', 'k'), mm('mo', ')'));
  const z = mm('mrow', mm('msub', mm('mi', 'z'), mm('mi', 'n')), mm('mo', '='),
    mm('mfrac', mm('mrow', mm('msub', mm('mi', 'x'), mm('mi', 'n')), mm('mo', '−'), mm('mi', 'μ')), mm('mi', 'σ')));
  const m = mm('math', mm('mtable', mm('mtr', mm('mtd', row('+', 'n'))), mm('mtr', mm('mtd', row('−', 'n'))), mm('mtr', mm('mtd', z))));
  m.setAttribute('display', 'block');
  return m;
}

// Agreement per agent as horizontal bars: one group per agent (its name above its bars), one bar
// per report (A, then B), each with its rate in percent. `series` is [[label, report]]; a report
// has `agents` ([{agent, total, agree}]). Narrow enough to stay legible on a phone.
export function agreementChart(series, title) {
  const agents = [];
  for (const [, r] of series) for (const a of r.agents || []) if (!agents.includes(a.agent)) agents.push(a.agent);
  const W = 440; const L = 4; const scale = 340; const bar = 20; const head = 18; const gap = 10;
  const group = head + bar * series.length + gap;
  const H = agents.length * group + 22;
  const svg = s('svg', { class: 'chart bars', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title, preserveAspectRatio: 'xMidYMid meet' },
    s('title', {}, title),
    s('line', { class: 'axis', x1: L, y1: 4, x2: L, y2: H - 16 }),
    s('line', { class: 'grid', x1: L + scale, y1: 4, x2: L + scale, y2: H - 16 }),
    s('text', { x: L, y: H - 3 }, '0%'),
    s('text', { x: L + scale - 16, y: H - 3 }, '100%'));
  agents.forEach((agent, i) => {
    const y0 = 4 + i * group;
    svg.append(s('text', { class: 'label', x: L + 4, y: y0 + head - 5 }, agent.length > 48 ? `${agent.slice(0, 47)}…` : agent));
    series.forEach(([label, report], j) => {
      const a = (report.agents || []).find((x) => x.agent === agent);
      const rate = a && a.total ? a.agree / a.total : (a ? 1 : 0);
      const y = y0 + head + j * bar;
      const pct = `${(rate * 100).toFixed(1)}%`;
      svg.append(
        s('rect', { class: `bar bar-${j}`, x: L, y, width: Math.max(rate * scale, 1).toFixed(1), height: bar - 4, 'data-agent': agent },
          s('title', {}, `${label ? `${label} · ` : ''}${agent}: ${a ? `${a.agree}/${a.total}` : '—'} (${pct})`)),
        s('text', { x: L + rate * scale + 6, y: y + bar - 8 }, `${label ? `${label} ` : ''}${pct}`));
    });
  });
  return svg;
}
