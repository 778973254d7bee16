// Decisions and audit: a searchable table of decision records (agent, verdict, code, tool, time)
// with a record view showing its harness_checks, the audit log's events, and the chain's
// verification status (GET /v1/audit/verify). A record can be rated 1–5 with a comment
// (POST /v1/decisions/{id}/feedback) and shows the feedback stored for it (GET /v1/feedback).
import { get, hasScope, post } from './api.js';
import { t } from './i18n.js';
import { h, clear, badge, verdictKind, facts, json, errorBox, table, tabs, field, time, runIdOf, announce, codeBadge, codeText } from './ui.js';

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
    // The chain against its signed heads: a deleted tail, a rewrite, or why the tail is unanchored.
    if (s.tail && s.tail.note) chain.append(h('p', { id: 'chain-tail' }, s.tail.note));
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
    const rows = all.filter((r) => matches(q, [r.agent, r.final_verdict, codeText('verdict', r.final_verdict), codeOf(r), toolOf(r), r.pipeline_run_id, r.model]));
    clear(body);
    if (!rows.length) { body.append(h('p', { class: 'panel' }, t('decisions.none'))); return; }
    body.append(table([t('decisions.agent'), t('decisions.verdict'), t('decisions.code'), t('decisions.tool'), t('decisions.time'), ''],
      rows.map((r) => h('tr', {},
        h('td', {}, r.agent), h('td', {}, codeBadge('verdict', r.final_verdict)),
        h('td', {}, codeOf(r) || '—'), h('td', {}, toolOf(r) || '—'), h('td', {}, time(r.created_at)),
        h('td', {}, h('button', { type: 'button', onclick: () => show(r) }, t('decisions.open')))))));
  };
  const show = (r) => {
    clear(detail).append(h('section', { class: 'panel', 'aria-labelledby': 'record-title' },
      h('h2', { id: 'record-title', tabindex: '-1' }, t('decisions.record'), ' ', h('span', { class: 'hash' }, r.decision_id)),
      facts([
        [t('decisions.agent'), r.agent], [t('decisions.model'), r.model || '—'],
        [t('decisions.final_verdict'), codeBadge('verdict', r.final_verdict)],
        [t('decisions.run'), h('a', { href: `#/runs/${encodeURIComponent(runIdOf(r.pipeline_run_id))}` }, runIdOf(r.pipeline_run_id))],
        [t('decisions.tokens'), `${r.prompt_tokens} + ${r.completion_tokens}`],
        [t('decisions.latency'), `${r.latency_ms} ms`], [t('decisions.time'), time(r.created_at)],
      ]),
      h('h3', {}, t('decisions.harness_checks'), ' ', h('code', { class: 'muted' }, 'harness_checks')), json(r.harness_checks),
      h('h3', {}, t('decisions.output')), json(r.output),
      feedbackPanel(r.decision_id, signal)));
    document.getElementById('record-title').focus();
  };
  get('/v1/decisions?limit=500', signal).then((d) => { all = d.decisions || []; draw(); },
    (err) => { if (err.name !== 'AbortError') clear(body).append(errorBox(err)); });
}

// "Rate this decision" (with feedback:write) and the feedback stored for it (feedback:read or
// feedback:write).
function feedbackPanel(decisionId, signal) {
  const canWrite = hasScope('feedback:write');
  const canRead = canWrite || hasScope('feedback:read');
  const box = h('section', { id: 'feedback', 'aria-labelledby': 'feedback-title' }, h('h3', { id: 'feedback-title' }, t('feedback.title')));
  if (!canRead) { box.append(h('p', { class: 'muted' }, t('feedback.no_scope'))); return box; }
  const stored = h('div', { id: 'feedback-list' }, h('p', { class: 'muted' }, t('common.loading')));
  const status = h('div', { role: 'status' });
  const load = async () => {
    try {
      const r = await get(`/v1/feedback?decision_id=${encodeURIComponent(decisionId)}&limit=100`, signal);
      clear(stored);
      const list = r.feedback || [];
      if (!list.length) { stored.append(h('p', { class: 'muted' }, t('feedback.none'))); return; }
      stored.append(table([t('feedback.rating'), t('feedback.comment'), t('feedback.rater'), t('decisions.time')],
        list.map((f) => h('tr', { class: 'feedback-row' },
          h('td', {}, f.rating != null ? `${'★'.repeat(f.rating)}${'☆'.repeat(5 - f.rating)} ${f.rating}/5` : (f.score != null ? t('feedback.score', { score: f.score }) : '—')),
          h('td', {}, f.comment || '—'), h('td', {}, f.rater || '—'), h('td', {}, time(f.created_at))))));
    } catch (err) { if (err.name !== 'AbortError') clear(stored).append(errorBox(err)); }
  };
  if (canWrite) {
    const group = h('fieldset', { class: 'row' }, h('legend', {}, t('feedback.rating_legend')));
    for (let n = 1; n <= 5; n += 1) {
      const id = `rating-${n}`;
      group.append(h('span', { class: 'row' }, h('input', { type: 'radio', name: 'rating', id, value: String(n) }), h('label', { for: id, class: 'inline' }, String(n))));
    }
    const comment = h('textarea', { id: 'feedback-comment', rows: '2', maxlength: '2000' });
    const form = h('form', { id: 'feedback-form' }, group, field(t('feedback.comment_label'), comment),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary', 'data-action': 'rate' }, t('feedback.submit'))), status);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clear(status);
      const picked = form.querySelector('input[name="rating"]:checked');
      if (!picked) { status.append(errorBox({ code: 'bad_request', message: t('feedback.rating_needed') })); return; }
      const body = { rating: Number(picked.value) };
      if (comment.value.trim()) body.comment = comment.value.trim();
      try {
        await post(`/v1/decisions/${encodeURIComponent(decisionId)}/feedback`, body, signal);
        status.append(h('p', { class: 'notice', id: 'feedback-result' }, t('feedback.saved')));
        announce(t('feedback.saved'));
        picked.checked = false; comment.value = '';
        load();
      } catch (err) { if (err.name !== 'AbortError') status.append(errorBox(err)); }
    });
    box.append(form);
  }
  box.append(h('h4', {}, t('feedback.stored')), stored);
  load();
  return box;
}

function audit(panel, signal) {
  const body = h('div', {}, h('p', { class: 'muted' }, t('common.loading')));
  let all = [];
  let q = '';
  panel.append(searchBox((v) => { q = v; draw(); }), body);
  const draw = () => {
    const rows = all.filter((e) => matches(q, [e.kind, codeText('audit_kind', e.kind), e.subject, e.display, displayText(e.display), e.decision, e.code, e.tool, e.approver, e.run_id]));
    clear(body);
    if (!rows.length) { body.append(h('p', { class: 'panel' }, t('decisions.none'))); return; }
    body.append(table(['#', t('audit.kind'), t('audit.subject'), t('decisions.verdict'), t('decisions.code'), t('decisions.tool'), t('decisions.time')],
      rows.map((e) => h('tr', {},
        h('td', {}, String(e.seq)), h('td', {}, h('span', { class: 'kind', title: e.kind, 'data-code': e.kind }, codeText('audit_kind', e.kind))),
        h('td', {}, e.approver || e.subject),
        h('td', {}, e.display || e.decision ? shownDisplay(e) : '—'),
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

// The colour of an audit event's `display`: a call waiting for a human is a warning, not a
// refusal, although its stored `decision` is `rejected` (with `approval_required`).
function displayKind(e) {
  if (/^waiting|^in progress|^dry run/.test(e.display || '')) return 'warn';
  if (e.decision) return verdictKind(e.decision);
  return /^refused|blocked|rejected/.test(e.display || '') ? 'bad' : 'info';
}

// An audit event's `display` (the server's words for what it means) in the console's language:
// `refused: {code}` and the like keep their code; the server's text stays as the title.
function displayText(display) {
  const d = String(display || '');
  let m = /^refused: (.+)$/.exec(d);
  if (m) return t('display.refused', { code: m[1] });
  m = /^dry run: would be refused \((.+)\)$/.exec(d);
  if (m) return t('display.dry_run_refused', { code: m[1] });
  m = /^change settled: (.+)$/.exec(d);
  if (m && m[1] !== 'applied') return t('display.change_settled_code', { code: m[1] });
  const key = d.toLowerCase().replace(/[^a-z]+/g, '_').replace(/^_+|_+$/g, '');
  return key ? t(`display.${key}`, {}, d) : d;
}

function shownDisplay(e) {
  const raw = e.display || e.decision;
  const b = badge(e.display ? displayText(e.display) : codeText('verdict', e.decision), displayKind(e));
  b.title = raw;
  b.dataset.code = raw;
  return b;
}
