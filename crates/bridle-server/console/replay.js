// The replay report viewer of the Drift view: a `bridle replay --report FILE` FILE.json (one
// model, an A/B pair with `--ab`, or `--json --gate`'s `{report, gate}`) read in the browser
// with the File API (never uploaded, no request made): agreement per agent as an SVG bar chart,
// the totals, the per-agent table and the disagreements.
import { t } from './i18n.js';
import { h, clear, badge, errorBox, table, field, announce } from './ui.js';
import { agreementChart } from './chart.js';

const pct = (agree, total) => (total ? `${((agree / total) * 100).toFixed(1)}%` : '—');

function isReport(r) { return r && typeof r === 'object' && Array.isArray(r.agents) && Array.isArray(r.items); }

export function replaySection() {
  const input = h('input', { type: 'file', id: 'replay-file', accept: '.json,application/json' });
  const out = h('div', { id: 'replay-view' });
  input.addEventListener('change', async () => {
    clear(out);
    const file = input.files && input.files[0];
    if (!file) return;
    try {
      render(out, JSON.parse(await file.text()), file.name);
      announce(t('replay.loaded'));
    } catch (err) {
      out.append(errorBox({ code: 'bad_report', message: err instanceof SyntaxError ? t('replay.not_json') : String(err.message || err) }));
    }
  });
  return h('section', { class: 'panel', 'aria-labelledby': 'replay-title' },
    h('h2', { id: 'replay-title' }, t('replay.title')),
    h('p', {}, t('replay.help')),
    field(t('replay.file'), input),
    h('p', { class: 'muted' }, t('replay.local')),
    out);
}

function render(out, data, name) {
  if (data && isReport(data.a) && isReport(data.b)) { renderAb(out, data, name); return; }
  const report = data && isReport(data.report) ? data.report : data;
  if (!isReport(report)) throw new Error(t('replay.not_report'));
  out.append(
    h('h3', {}, t('replay.single', { name })),
    h('p', { id: 'replay-totals' }, t('replay.totals', { model: report.model, agree: report.agree, total: report.total, rate: pct(report.agree, report.total) })));
  if (data.gate) {
    const g = data.gate;
    out.append(h('p', { id: 'replay-gate' }, badge(g.passed ? t('replay.gate_passed') : t('replay.gate_failed'), g.passed ? 'ok' : 'bad'), ' ',
      t('replay.gate', { agreement: `${(g.agreement * 100).toFixed(1)}%`, threshold: `${(g.threshold * 100).toFixed(1)}%` })));
  }
  out.append(agreementChart([['', report]], t('replay.chart')), agentTable(report), h('h3', {}, t('replay.disagreements')), disagreements(report));
}

function renderAb(out, ab, name) {
  out.append(
    h('h3', {}, t('replay.ab', { name })),
    h('p', { id: 'replay-totals' },
      t('replay.ab_totals', { a: ab.a.model, a_agree: ab.a.agree, a_total: ab.a.total, b: ab.b.model, b_agree: ab.b.agree, b_total: ab.b.total, both: ab.a_b_agree ?? '—' })),
    agreementChart([['A', ab.a], ['B', ab.b]], t('replay.chart_ab')),
    h('ul', { class: 'legend' },
      h('li', {}, h('span', { class: 'swatch swatch-0', 'aria-hidden': 'true' }), `A · ${ab.a.model}`),
      h('li', {}, h('span', { class: 'swatch swatch-1', 'aria-hidden': 'true' }), `B · ${ab.b.model}`)));
  for (const [label, r] of [['A', ab.a], ['B', ab.b]]) {
    out.append(h('section', { class: 'replay-side', 'data-side': label },
      h('h3', {}, t('replay.side', { side: label, model: r.model, rate: pct(r.agree, r.total) })),
      agentTable(r), h('h4', {}, t('replay.disagreements')), disagreements(r)));
  }
}

function agentTable(r) {
  return table([t('decisions.agent'), t('replay.decisions'), t('replay.agree'), t('replay.action'), t('replay.parameters'), t('decisions.verdict'), t('replay.errors')],
    (r.agents || []).map((a) => h('tr', {},
      h('td', {}, a.agent), h('td', {}, String(a.total)), h('td', {}, `${a.agree} (${pct(a.agree, a.total)})`),
      h('td', {}, String(a.action)), h('td', {}, String(a.parameters)), h('td', {}, String(a.verdict)), h('td', {}, String(a.errors)))));
}

function disagreements(r) {
  const rows = (r.items || []).filter((i) => !(i.comparison && i.comparison.agree));
  if (!rows.length) return h('p', { class: 'notice' }, t('replay.all_agree'));
  return h('div', { class: 'replay-disagreements' }, table([t('replay.decision'), t('decisions.agent'), t('replay.differed')],
    rows.map((i) => h('tr', {},
      h('td', { class: 'hash' }, i.decision_id), h('td', {}, i.agent),
      h('td', {}, i.error ? badge(t('replay.error'), 'bad') : null, ' ', i.error || (i.comparison ? i.comparison.differences.join('; ') : ''))))));
}
