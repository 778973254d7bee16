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
