// Decisions and audit: a searchable table of decision records (agent, verdict, code, tool, time)
// with a record view showing its harness_checks, the audit log's events, and the chain's
// verification status (GET /v1/audit/verify).
import { get } from './api.js';
import { t } from './i18n.js';
import { h, clear, badge, verdictKind, facts, json, errorBox, table, tabs, field, time, runIdOf } from './ui.js';

export function view(main, { signal, parts }) {
  const which = parts[0] === 'audit' ? 'audit' : 'records';
  const chain = h('div', { id: 'chain-status', class: 'panel' }, t('audit.verifying'));
  const panel = h('div', { id: 'tabpanel', role: 'tabpanel', 'aria-labelledby': `tab-${which}` });
  main.append(
    h('h1', {}, t('decisions.title')), chain,
    tabs([['records', t('decisions.records')], ['audit', t('decisions.audit')]], which, (k, focus) => {
      location.hash = `#/decisions/${k}`;
      if (focus) setTimeout(() => { const el = document.getElementById(`tab-${k}`); if (el) el.focus(); }, 0);
    }),
    panel);
  get('/v1/audit/verify', signal).then((s) => {
    clear(chain).append(h('div', { class: 'row' },
      h('strong', {}, t('audit.chain')),
      badge(s.ok ? t('audit.intact') : t('audit.broken'), s.ok ? 'ok' : 'bad'),
      h('span', {}, t('audit.verified', { n: s.verified, tenant: s.tenant }))));
    if (s.broken) chain.append(h('p', {}, t('audit.broken_at', { seq: s.broken.seq, problem: s.broken.problem })));
  }, (err) => { if (err.name !== 'AbortError') clear(chain).append(errorBox(err)); });
  if (which === 'audit') audit(panel, signal); else records(panel, signal);
}

function searchBox(onInput) {
  const input = h('input', { type: 'search', id: 'search', autocomplete: 'off' });
  input.addEventListener('input', () => onInput(input.value.trim().toLowerCase()));
  return field(t('decisions.search'), input);
}

function matches(q, values) { return !q || values.some((v) => String(v ?? '').toLowerCase().includes(q)); }

function codeOf(r) {
  const hc = r.harness_checks || {};
  return hc.code || (r.output && r.output.code) || (Array.isArray(hc.codes) ? hc.codes.join(', ') : '') || '';
}

function toolOf(r) {
  const hc = r.harness_checks || {};
  return hc.tool || (r.input && r.input.tool) || (r.output && r.output.tool) || '';
}

function records(panel, signal) {
  const body = h('div', {}, h('p', { class: 'muted' }, t('common.loading')));
  const detail = h('div', { id: 'record-detail' });
  let all = [];
  let q = '';
  panel.append(searchBox((v) => { q = v; draw(); }), body, detail);
  const draw = () => {
    const rows = all.filter((r) => matches(q, [r.agent, r.final_verdict, codeOf(r), toolOf(r), r.pipeline_run_id, r.model]));
    clear(body);
    if (!rows.length) { body.append(h('p', { class: 'panel' }, t('decisions.none'))); return; }
    body.append(table([t('decisions.agent'), t('decisions.verdict'), t('decisions.code'), t('decisions.tool'), t('decisions.time'), ''],
      rows.map((r) => h('tr', {},
        h('td', {}, r.agent), h('td', {}, badge(r.final_verdict, verdictKind(r.final_verdict))),
        h('td', {}, codeOf(r) || '—'), h('td', {}, toolOf(r) || '—'), h('td', {}, time(r.created_at)),
        h('td', {}, h('button', { type: 'button', onclick: () => show(r) }, t('decisions.open')))))));
  };
  const show = (r) => {
    clear(detail).append(h('section', { class: 'panel', 'aria-labelledby': 'record-title' },
      h('h2', { id: 'record-title', tabindex: '-1' }, t('decisions.record'), ' ', h('span', { class: 'hash' }, r.decision_id)),
      facts([
        [t('decisions.agent'), r.agent], [t('decisions.model'), r.model || '—'],
        [t('decisions.verdict'), badge(r.final_verdict, verdictKind(r.final_verdict))],
        [t('decisions.run'), h('a', { href: `#/runs/${encodeURIComponent(runIdOf(r.pipeline_run_id))}` }, runIdOf(r.pipeline_run_id))],
        [t('decisions.tokens'), `${r.prompt_tokens} + ${r.completion_tokens}`],
        [t('decisions.latency'), `${r.latency_ms} ms`], [t('decisions.time'), time(r.created_at)],
      ]),
      h('h3', {}, 'harness_checks'), json(r.harness_checks),
      h('h3', {}, t('decisions.output')), json(r.output)));
    document.getElementById('record-title').focus();
  };
  get('/v1/decisions?limit=500', signal).then((d) => { all = d.decisions || []; draw(); },
    (err) => { if (err.name !== 'AbortError') clear(body).append(errorBox(err)); });
}

function audit(panel, signal) {
  const body = h('div', {}, h('p', { class: 'muted' }, t('common.loading')));
  let all = [];
  let q = '';
  panel.append(searchBox((v) => { q = v; draw(); }), body);
  const draw = () => {
    const rows = all.filter((e) => matches(q, [e.kind, e.subject, e.decision, e.code, e.tool, e.approver, e.run_id]));
    clear(body);
    if (!rows.length) { body.append(h('p', { class: 'panel' }, t('decisions.none'))); return; }
    body.append(table(['#', t('audit.kind'), t('audit.subject'), t('decisions.verdict'), t('decisions.code'), t('decisions.tool'), t('decisions.time')],
      rows.map((e) => h('tr', {},
        h('td', {}, String(e.seq)), h('td', {}, e.kind), h('td', {}, e.approver || e.subject),
        h('td', {}, e.decision ? badge(e.decision, verdictKind(e.decision)) : '—'),
        h('td', {}, e.code || '—'), h('td', {}, e.tool || '—'), h('td', {}, time(e.at))))));
  };
  (async () => {
    try {
      let after = 0;
      for (let page = 0; page < 20; page += 1) {
        const p = await get(`/v1/audit?after=${after}&limit=1000`, signal);
        all = all.concat(p.events || []);
        if (!p.next_after) break;
        after = p.next_after;
      }
      all.reverse();
      draw();
    } catch (err) {
      if (err.name !== 'AbortError') clear(body).append(errorBox(err));
    }
  })();
}
