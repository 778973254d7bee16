// Runs: the tenant's runs, and one run with its live timeline (GET /v1/runs/{id}/events), the
// interrupts waiting for a human (choose a candidate, approve or reject a plan) and degraded
// markers.
import { follow, get, post, claims } from './api.js';
import { t } from './i18n.js';
import { h, clear, badge, verdictKind, facts, json, errorBox, table, announce, field, approveControl, time, codeText } from './ui.js';

export function view(main, ctx) {
  if (ctx.parts[0]) detail(main, ctx.parts[0], ctx);
  else list(main, ctx);
}

function list(main, { signal, query }) {
  const statusSel = h('select', { id: 'run-status' },
    ['', 'running', 'interrupted', 'done', 'failed', 'cancelled'].map((s) =>
      h('option', { value: s, selected: (query.get('status') || '') === s }, s ? t(`runs.status_${s}`) : t('runs.all'))));
  const body = h('div', { id: 'run-list' }, h('p', { class: 'muted' }, t('common.loading')));
  const refresh = h('button', { type: 'button', onclick: () => load() }, t('common.refresh'));
  main.append(
    h('h1', {}, t('runs.title')),
    h('div', { class: 'row panel' }, h('div', { class: 'grow' }, field(t('runs.filter'), statusSel)), refresh),
    body);
  statusSel.addEventListener('change', () => { location.hash = statusSel.value ? `#/runs?status=${statusSel.value}` : '#/runs'; });
  const load = async () => {
    try {
      const q = query.get('status') ? `?status=${encodeURIComponent(query.get('status'))}` : '';
      const page = await get(`/v1/runs${q}`, signal);
      clear(body);
      if (!page.runs.length) { body.append(h('p', { class: 'panel' }, t('runs.none'))); return; }
      body.append(table([t('runs.id'), t('runs.status'), t('runs.pipeline'), t('runs.started_at'), t('runs.starter'), t('runs.duration'), t('runs.steps')],
        page.runs.map((r) => h('tr', {},
          h('td', {}, h('a', { href: `#/runs/${encodeURIComponent(r.run_id)}`, class: 'hash' }, r.run_id)),
          h('td', {}, badge(t(`runs.status_${r.status}`), verdictKind(r.status))),
          h('td', {}, r.pipeline || '—'),
          h('td', {}, r.started_at ? time(r.started_at) : '—'),
          h('td', {}, r.starter || '—'),
          h('td', {}, duration(r.duration_ms)),
          h('td', {}, String(r.steps))))));
    } catch (err) {
      if (err.name !== 'AbortError') clear(body).append(errorBox(err));
    }
  };
  load();
}

function detail(main, runId, { signal }) {
  const head = h('div', { id: 'run-head' }, h('p', { class: 'muted' }, t('common.loading')));
  const interrupts = h('div', { id: 'run-interrupts' });
  const feedback = h('div', { role: 'status' });
  const timeline = h('ol', { class: 'timeline', id: 'run-timeline', 'aria-live': 'polite' });
  const outcome = h('div', { id: 'run-outcome' });
  main.append(
    h('p', {}, h('a', { href: '#/runs' }, `← ${t('runs.title')}`)),
    h('h1', {}, t('runs.run'), ' ', h('span', { class: 'hash' }, runId)),
    head, feedback, interrupts,
    h('h2', {}, t('runs.timeline')), timeline, outcome);

  const refresh = async () => {
    try {
      const run = await get(`/v1/runs/${encodeURIComponent(runId)}`, signal);
      clear(head).append(h('div', { class: 'panel' }, facts([
        [t('runs.pipeline'), run.pipeline || '—'],
        [t('runs.status'), h('span', { id: 'run-status-badge' }, badge(t(`runs.status_${run.status}`, {}, run.status), verdictKind(run.status)))],
        [t('runs.started_at'), run.started_at ? time(run.started_at) : '—'],
        [t('runs.starter'), run.starter || '—'],
        [t('runs.duration'), duration(run.duration_ms)],
        [t('runs.steps'), String(run.steps)],
        [t('runs.degraded'), degradedOf(run.state) ? badge(t('runs.degraded_yes'), 'warn') : t('runs.degraded_no')],
        [t('runs.error'), run.error ? `${run.error.code}: ${run.error.message}` : '—'],
      ])));
      renderInterrupts(run);
      renderHistory(run);
      return run;
    } catch (err) {
      if (err.name !== 'AbortError') clear(head).append(errorBox(err));
      return null;
    }
  };

  const showOutcome = (state) => clear(outcome).append(h('h2', {}, t('runs.outcome')), json(operatorView(state)));

  // The kept history (server records) and the run's tool calls; refreshed while it runs.
  const renderHistory = (run) => {
    if (run.kind === 'calls') clear(outcome).append(h('p', { class: 'muted' }, t('runs.calls_only')));
    // An ended run shows its outcome from the record too, not only from a `finished` event seen live.
    else if (['done', 'failed', 'cancelled'].includes(run.status) && run.state) {
      showOutcome(run.state);
    }
    const drawn = run.graph && run.graph.nodes.length ? drawGraph(run.graph) : null;
    const oldGraph = main.querySelector('#run-graph-box');
    if (drawn) {
      const box = h('div', { id: 'run-graph-box', class: 'panel' }, drawn);
      if (oldGraph) oldGraph.replaceWith(box); else timeline.before(box);
    }
    if (run.events && run.events.length) {
      clear(timeline);
      for (const ev of run.events) timeline.append(eventItem(ev.event, ev));
    }
    if (run.calls && run.calls.length) {
      const list = h('ol', { class: 'timeline', id: 'run-calls' });
      for (const c of run.calls) {
        list.append(h('li', { 'data-kind': c.kind }, h('strong', {}, c.tool), ' · ', c.display, ' · ', c.subject,
          c.approver ? ` · ${c.approver}` : '', ' · ', time(c.at)));
      }
      const old = main.querySelector('#run-calls-box');
      const box = h('div', { id: 'run-calls-box' }, h('h2', {}, t('runs.calls')), list);
      if (old) old.replaceWith(box); else timeline.after(box);
    }
  };

  const renderInterrupts = (run) => {
    clear(interrupts);
    const pending = run.status === 'interrupted' ? (run.interrupts || []) : [];
    if (!pending.length) return;
    interrupts.append(h('h2', {}, t('runs.waiting')));
    for (const i of pending) interrupts.append(interruptCard(i));
  };

  const resume = async (interrupt, value) => {
    clear(feedback);
    try {
      await post(`/v1/runs/${encodeURIComponent(runId)}/resume`, { interrupt_id: interrupt.id, value }, signal);
      clear(interrupts);
      feedback.append(h('p', { class: 'notice', id: 'resume-result' }, t('runs.resumed')));
      announce(t('runs.resumed'));
      watch();
    } catch (err) {
      if (err.name !== 'AbortError') feedback.append(errorBox(err));
    }
  };

  const confirmations = new Map(); // interrupt id → { open, typed }: an approval being confirmed
  const interruptCard = (i) => {
    const p = i.payload || {};
    const kind = p.kind || p.type || i.node;
    const box = h('section', { class: 'panel interrupt', 'data-kind': kind },
      h('div', { class: 'row' }, h('h3', { class: 'grow' }, t(`runs.kind_${kind}`, {}, kind)), badge(i.node, 'warn')));
    if (p.question || p.message) box.append(h('p', {}, p.question || p.message));
    if (p.problem) box.append(h('p', { class: 'error-box' }, String(p.problem)));
    const candidates = Array.isArray(p.options) ? p.options : Array.isArray(p.candidates) ? p.candidates : null;
    if (candidates) {
      if (p.equipment) box.append(h('p', {}, t('runs.equipment', { equipment: p.equipment })));
      const group = h('fieldset', {}, h('legend', {}, t('runs.choose_one')));
      candidates.forEach((c, n) => {
        const rid = `cand-${i.id}-${n}`;
        group.append(h('div', { class: 'row' },
          h('input', { type: 'radio', name: `cand-${i.id}`, id: rid, value: String(n) }),
          h('label', { for: rid, class: 'inline' }, candidateLabel(c, n))));
        if (c && typeof c === 'object' && c.evidence) group.append(json(c.evidence));
      });
      box.append(group, h('button', {
        type: 'button', class: 'primary', 'data-action': 'choose',
        onclick: () => {
          const picked = box.querySelector(`input[name="cand-${i.id}"]:checked`);
          if (!picked) { clear(feedback).append(errorBox({ code: 'bad_request', message: t('runs.pick_one') })); return; }
          const c = candidates[Number(picked.value)];
          resume(i, c && typeof c === 'object' && 'cause' in c ? { cause: c.cause } : { choice: Number(picked.value) });
        },
      }, t('runs.choose')));
      return box;
    }
    // Fab pauses carry the plan under `plan`; workflow pauses carry its fields at the top.
    const plan = p.plan || (kind === 'approve_plan' ? p : null);
    if (plan) {
      box.append(facts([
        [t('decisions.tool'), plan.tool],
        [t('approvals.plan_hash'), h('span', { class: 'hash' }, plan.plan_hash || '—')],
        [t('approvals.level'), codeText('level', plan.level)],
        [t('runs.degraded'), plan.degraded ? badge(t('runs.degraded_yes'), 'warn') : t('runs.degraded_no')],
        [t('runs.why'), Array.isArray(plan.why) ? plan.why.join('; ') || '—' : String(plan.why ?? '—')],
      ]), h('h4', {}, t('approvals.arguments')), json(plan.arguments));
    } else {
      box.append(json(p.data !== undefined ? p.data : p));
    }
    const approvalId = plan && plan.approval_id;
    const reason = h('textarea', { id: `why-${i.id}`, rows: '2' });
    // A plan with an approval id is decided at the approvals desk (approver ≠ requester, levels),
    // then the run is told to look again; without one the answer itself carries the decision.
    const decide = async (approve) => {
      if (!approve && !reason.value.trim()) {
        reason.setAttribute('aria-invalid', 'true'); reason.focus();
        clear(feedback).append(errorBox({ code: 'bad_request', message: t('approvals.reason_needed') }));
        return;
      }
      if (!approvalId) { resume(i, approve ? { approved: true } : { approved: false, reason: reason.value }); return; }
      try {
        const path = `/v1/approvals/${encodeURIComponent(approvalId)}/${approve ? 'approve' : 'reject'}`;
        const res = await post(path, approve ? undefined : { reason: reason.value }, signal);
        if (res.approval.status === 'pending') {
          clear(feedback).append(h('p', { class: 'notice' }, t('approvals.approved', { tool: plan.tool, status: codeText('approval_status', res.approval.status), who: (claims() || {}).sub || '?' })));
          return;
        }
        resume(i, {});
      } catch (err) { if (err.name !== 'AbortError') clear(feedback).append(errorBox(err)); }
    };
    const signOff = String(plan && plan.level).includes('sign');
    if (!confirmations.has(i.id)) confirmations.set(i.id, { open: false, typed: '' });
    box.append(field(t('runs.reason'), reason), h('div', { class: 'row' },
      approveControl({
        key: i.id, tool: plan ? plan.tool : t('approvals.approve'), strong: signOff || (plan && plan.risk === 'destructive'),
        label: signOff ? t('approvals.sign_off') : t('approvals.approve'), state: confirmations.get(i.id), onConfirm: () => decide(true),
      }),
      h('button', { type: 'button', class: 'danger', 'data-action': 'reject', onclick: () => decide(false) }, t('approvals.reject'))));
    return box;
  };

  let watcher = null;
  const watch = () => {
    if (watcher) watcher.abort();
    watcher = new AbortController();
    signal.addEventListener('abort', () => watcher.abort());
    follow(`/v1/runs/${encodeURIComponent(runId)}/events`, {
      signal: watcher.signal,
      once: true,
      onEvent: (name, ev) => {
        if (name === 'finished') {
          showOutcome(ev.outcome ? ev.outcome.state : ev);
        }
        refresh();
      },
      onState: (s, err) => { if (err) feedback.append(errorBox(err)); },
    });
  };
  // A run only the gate knows (its calls) has no event stream to follow.
  refresh().then((run) => { if (run && run.kind !== 'calls') watch(); });
}

// The run's graph as SVG (built with DOM calls, no inline style): nodes in layers by their
// distance from the start, each coloured by its state through a CSS class.
const SVGNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.append(...kids);
  return el;
}
function drawGraph(graph) {
  const depth = new Map();
  const ids = graph.nodes.map((n) => n.id);
  const next = (id) => graph.edges.filter((e) => e.from === id).map((e) => e.to).filter((to) => ids.includes(to));
  let layer = graph.edges.filter((e) => e.from === '__start__').map((e) => e.to).filter((to) => ids.includes(to));
  for (let d = 0; layer.length && d < ids.length; d += 1) {
    const fresh = layer.filter((id) => !depth.has(id));
    fresh.forEach((id) => depth.set(id, d));
    layer = [...new Set(fresh.flatMap(next))];
  }
  ids.forEach((id) => { if (!depth.has(id)) depth.set(id, depth.size ? Math.max(...depth.values()) + 1 : 0); });
  const rows = new Map();
  const pos = new Map();
  const W = 150; const H = 34; const GX = 40; const GY = 22;
  for (const id of ids) {
    const d = depth.get(id); const r = rows.get(d) || 0; rows.set(d, r + 1);
    pos.set(id, { x: 10 + r * (W + GX), y: 10 + d * (H + GY) });
  }
  const width = 20 + Math.max(...rows.values()) * (W + GX);
  const height = 20 + (Math.max(...depth.values()) + 1) * (H + GY);
  const out = svg('svg', { class: 'run-graph', id: 'run-graph', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': t('runs.graph') });
  for (const e of graph.edges) {
    const a = pos.get(e.from); const b = pos.get(e.to);
    if (a && b) out.append(svg('line', { class: 'edge', x1: a.x + W / 2, y1: a.y + H, x2: b.x + W / 2, y2: b.y }));
  }
  for (const n of graph.nodes) {
    const p = pos.get(n.id);
    const label = `${n.id} · ${t(`runs.node_${n.state}`)}`;
    out.append(svg('g', { class: `node ${n.state}`, 'data-node': n.id, 'data-state': n.state },
      svg('title', {}, label),
      svg('rect', { x: p.x, y: p.y, width: W, height: H, rx: 6 }),
      svg('text', { x: p.x + 8, y: p.y + 14 }, n.id.length > 20 ? `${n.id.slice(0, 19)}…` : n.id),
      svg('text', { x: p.x + 8, y: p.y + 28, class: 'state' }, t(`runs.node_${n.state}`))));
  }
  return out;
}

// The state without the engine's own keys (`_requester`, `_visits` …).
function operatorView(v) {
  if (Array.isArray(v)) return v.map(operatorView);
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).filter(([k]) => !k.startsWith('_')).map(([k, x]) => [k, operatorView(x)]));
}

function duration(ms) {
  if (typeof ms !== 'number') return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function candidateLabel(c, n) {
  if (typeof c !== 'object' || c === null) return String(c);
  const confidence = typeof c.confidence === 'number' ? ` (${(c.confidence * 100).toFixed(0)}%)` : '';
  return `${n + 1}. ${c.cause || c.title || c.name || c.summary || c.id || ''}${confidence}`;
}

function degradedOf(state) {
  if (!state || typeof state !== 'object') return false;
  if (state.degraded === true) return true;
  return JSON.stringify(state).includes('"degraded":true');
}

function eventItem(name, ev) {
  const degraded = ev.degraded === true || name.includes('degraded');
  const failed = name === 'node_error' || (name === 'finished' && ev.outcome && ev.outcome.status === 'failed');
  const li = h('li', { class: `${degraded ? 'degraded' : ''} ${failed ? 'error' : ''}`, 'data-event': name });
  const paused = name === 'finished' && (ev.outcome ? ev.outcome.status : ev.status) === 'interrupted';
  li.append(h('strong', {}, paused ? t('runs.status_interrupted') : name));
  if (ev.node) li.append(' · ', h('code', {}, ev.node));
  if (ev.step !== undefined) li.append(' · ', t('runs.step', { n: ev.step }));
  if (ev.duration_us !== undefined) li.append(' · ', `${(ev.duration_us / 1000).toFixed(1)} ms`);
  if (degraded) li.append(' ', badge(t('runs.degraded_yes'), 'warn'));
  if (ev.error) li.append(h('div', { class: 'muted' }, `${ev.error.code}: ${ev.error.message}`));
  if (name === 'answered' && ev.by) li.append(' · ', t('runs.answered_by', { who: ev.by }));
  if (ev.at) li.append(' · ', time(ev.at));
  const ended = ev.outcome ? ev.outcome.status : ev.status;
  if (name === 'finished' && ended) li.append(' ', badge(t(`runs.status_${ended}`), verdictKind(ended)));
  return li;
}
