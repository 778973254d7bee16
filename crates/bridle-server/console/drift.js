// Drift: the CUSUM scan of the tenant's decision log (GET /v1/drift), one chart per series
// with its warning and critical thresholds, and the detector's formula in MathML; below, the
// replay report viewer (replay.js).
import { get } from './api.js';
import { t } from './i18n.js';
import { h, clear, badge, verdictKind, errorBox, facts, field } from './ui.js';
import { cusumChart, cusumFormula } from './chart.js';
import { replaySection } from './replay.js';

const METRICS = ['confidence', 'latency_ms', 'tokens', 'rejection_rate', 'degraded_rate', 'injection_detections', 'auto_executions'];

export function view(main, { signal, query }) {
  const metric = h('select', { id: 'drift-metric' },
    h('option', { value: '' }, t('drift.all_metrics')),
    METRICS.map((m) => h('option', { value: m, selected: query.get('metric') === m }, m)));
  metric.addEventListener('change', () => { location.hash = metric.value ? `#/drift?metric=${metric.value}` : '#/drift'; });
  const body = h('div', { id: 'drift-body' }, h('p', { class: 'muted' }, t('common.loading')));
  main.append(
    h('h1', {}, t('drift.title')),
    h('section', { class: 'panel' }, h('p', {}, t('drift.help')), cusumFormula(), h('p', { class: 'muted' }, t('drift.alarm'))),
    h('div', { class: 'panel' }, field(t('drift.metric'), metric)),
    body, replaySection());
  const q = query.get('metric') ? `?metric=${encodeURIComponent(query.get('metric'))}` : '';
  get(`/v1/drift${q}`, signal).then((r) => {
    clear(body);
    body.append(h('p', {}, t('drift.summary', { records: r.records, k: r.params.k, warning: r.params.warning, critical: r.params.critical, baseline: r.params.baseline_len })));
    if (!r.series.length) { body.append(h('p', { class: 'panel', id: 'drift-empty' }, t('drift.none'))); return; }
    for (const s of r.series) {
      const name = `${s.series.metric} · ${s.series.key}`;
      body.append(h('section', { class: 'panel drift-series' },
        h('div', { class: 'row' }, h('h2', { class: 'grow' }, name), badge(t(`drift.level_${s.status}`), verdictKind(s.status))),
        facts([
          [t('drift.baseline'), s.baseline ? `μ ${s.baseline[0].toFixed(4)}, σ ${s.baseline[1].toFixed(4)}` : t('drift.learning', { seen: s.seen, of: r.params.baseline_len })],
          [t('drift.sums'), `S⁺ ${s.upper.toFixed(2)} · S⁻ ${s.lower.toFixed(2)}`],
          [t('drift.alarms'), String(s.alarms.length)],
        ]),
        cusumChart(s.trace || [], r.params.warning, r.params.critical, t('drift.chart', { name }))));
    }
  }, (err) => { if (err.name !== 'AbortError') clear(body).append(errorBox(err)); });
}
