// Approvals: the tenant's pending plans, live from GET /v1/approvals/events; each with its
// context (why it needs approval, the agent and where its identity came from, incident, run,
// the tool's title, description and risk, a pipeline's evidence and the action history that
// escalated it, other pending requests for the same change), its arguments, diff against the
// current state, plan hash, requester, level and expiry (a live countdown and the time with its
// zone); approve (or sign off) through a confirmation no single keypress can pass, or reject
// with a reason.
import { follow, get, post, claims } from './api.js';
import { t, lang } from './i18n.js';
import { h, clear, badge, facts, json, errorBox, time, announce, id, runIdOf, approveControl, codeBadge, codeText, table } from './ui.js';

export function view(main, { signal, parts }) {
  const wanted = parts[0] || null; // `#/approvals/{id}`: this request is brought into view
  const status = h('span', { class: 'badge info', id: 'approvals-stream' }, t('approvals.connecting'));
  const list = h('div', { id: 'approval-list', 'aria-live': 'polite' });
  const feedback = h('div', { id: 'approval-feedback', role: 'status' });
  main.append(
    h('div', { class: 'row' }, h('h1', { class: 'grow' }, t('approvals.title')), status),
    h('p', { class: 'muted' }, t('approvals.help')),
    feedback, list);
  const details = new Map(); // id → detail promise (diff against the current state)
  const open = new Set(); // ids whose reject form is open
  const confirming = new Map(); // id → { open, typed }: an approval being confirmed
  let latest = [];
  let shown = false;

  const render = () => {
    // Keep what the operator is typing in an open reject form across live updates.
    const typed = new Map();
    for (const a of latest) {
      const el = document.getElementById(`reason-${a.id}`);
      if (el) typed.set(a.id, el.value);
    }
    const focused = document.activeElement && document.activeElement.id;
    clear(list);
    if (!latest.length) {
      list.append(h('p', { class: 'panel', id: 'no-approvals' }, t('approvals.none')));
      return;
    }
    for (const a of latest) list.append(card(a, typed.get(a.id)));
    if (focused) { const el = document.getElementById(focused); if (el) el.focus(); }
    if (wanted && !shown) {
      const el = list.querySelector(`section.approval[data-id="${CSS.escape(wanted)}"]`);
      // The request is brought into view and its title focused: never a button, so no keypress
      // decides it by accident.
      if (el) { shown = true; el.classList.add('wanted'); el.scrollIntoView({ block: 'start' }); const title = el.querySelector('h2'); if (title) title.focus(); }
    }
  };

  const card = (a, typed) => {
    const me = (claims() || {}).sub;
    const diffBox = h('div', { class: 'diff' }, h('p', { class: 'muted' }, t('common.loading')));
    if (!details.has(a.id)) details.set(a.id, get(`/v1/approvals/${encodeURIComponent(a.id)}`, signal));
    details.get(a.id).then((d) => fillDiff(diffBox, d), (err) => { clear(diffBox).append(errorBox(err)); });
    const signOff = String(a.level).includes('sign');
    const titleId = id('appr');
    const actions = h('div', { class: 'row' });
    if (!confirming.has(a.id)) confirming.set(a.id, { open: false, typed: '' });
    const approveBtn = approveControl({
      key: a.id, tool: a.plan.tool, strong: signOff || a.risk === 'destructive',
      label: signOff ? t('approvals.sign_off') : t('approvals.approve'),
      disabled: a.requester === me, state: confirming.get(a.id), onConfirm: () => act(a, 'approve'),
    });
    const rejectBtn = h('button', {
      type: 'button', class: 'danger', 'data-action': 'reject', 'data-id': a.id,
      'aria-expanded': open.has(a.id) ? 'true' : 'false',
      onclick: () => { if (open.has(a.id)) open.delete(a.id); else open.add(a.id); render(); const r = document.getElementById(`reason-${a.id}`); if (r) r.focus(); },
    }, t('approvals.reject'));
    actions.append(approveBtn, rejectBtn);
    if (a.requester === me) actions.append(h('span', { class: 'muted' }, t('approvals.own_request')));
    const info = a.tool_info || {};
    const ko = lang() === 'ko';
    const title = (ko && info.title_ko) || info.title || a.plan.tool;
    const description = (ko && info.description_ko) || info.description;
    const ctx = a.context || {};
    const section = h('section', { class: 'panel approval', 'aria-labelledby': titleId, 'data-id': a.id },
      h('div', { class: 'row' },
        h('h2', { id: titleId, class: 'grow', tabindex: '-1' }, title, ' ', h('code', { class: 'tool-name muted' }, a.plan.tool)),
        a.risk ? badge(t(`risk.${a.risk}`), a.risk === 'destructive' ? 'bad' : 'info') : null,
        codeBadge('level', a.level, 'warn'), codeBadge('approval_status', a.status, 'info')),
      description ? h('p', { class: 'tool-description', 'aria-label': t('desk.what_tool_does') }, description) : null,
      sameChange(a),
      facts([
        [t('approvals.why'), whyList(ctx)],
        [t('desk.agent'), agentOf(ctx)],
        [t('approvals.requester'), a.requester],
        [t('desk.incident'), a.plan.incident || '—'],
        [t('approvals.run'), !a.plan.run_id ? '—' : isGraphRun(a.plan)
          ? h('a', { href: `#/runs/${encodeURIComponent(runIdOf(a.plan.run_id))}`, class: 'hash run-link' }, runIdOf(a.plan.run_id))
          : h('a', { href: `#/runs/${encodeURIComponent(a.plan.run_id)}`, class: 'hash run-link' }, a.plan.run_id)],
        [t('approvals.expires'), expiry(a.expires_at)],
        [t('approvals.plan_hash'), h('span', { class: 'hash' }, a.plan_hash)],
        [t('approvals.grants'), (a.grants || []).map((g) => g.approver || JSON.stringify(g)).join(', ') || '—'],
      ]),
      evidenceOf(ctx.evidence),
      historyOf(ctx.history),
      h('h3', {}, t('approvals.arguments')), json(a.plan.arguments),
      h('h3', {}, t('approvals.diff')), diffBox,
      actions);
    if (open.has(a.id)) {
      const reason = h('textarea', { id: `reason-${a.id}`, rows: '2', value: typed || '' });
      const form = h('form', { class: 'reject-form' },
        h('label', { for: reason.id }, t('approvals.reason')), reason,
        h('div', { class: 'row' },
          h('button', { type: 'submit', class: 'danger', 'data-action': 'confirm-reject' }, t('approvals.confirm_reject')),
          h('button', { type: 'button', onclick: () => { open.delete(a.id); render(); } }, t('common.cancel'))));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        if (!reason.value.trim()) { reason.setAttribute('aria-invalid', 'true'); clear(feedback).append(errorBox({ code: 'bad_request', message: t('approvals.reason_needed') })); reason.focus(); return; }
        act(a, 'reject', reason.value);
      });
      section.append(form);
    }
    return section;
  };

  // A request opened by link that is no longer pending says what became of it, and who decided.
  let asked = false;
  const settled = async () => {
    try {
      const a = (await get(`/v1/approvals/${encodeURIComponent(wanted)}`, signal)).approval;
      if (a.status === 'pending') return;
      const grants = a.grants || [];
      const last = grants[grants.length - 1];
      const msg = a.status === 'rejected'
        ? t('approvals.settled_rejected', { tool: a.plan.tool, reason: a.rejection_reason || '—' })
        : t('approvals.settled_granted', {
          tool: a.plan.tool, who: grants.map((g) => g.approver).join(', ') || '—', when: last ? time(last.at) : '—',
          used: a.status === 'consumed' ? t('approvals.settled_used') : '',
        });
      clear(feedback).append(h('p', { class: 'notice', id: 'approval-settled' }, msg));
      announce(msg);
    } catch (err) {
      if (err.name !== 'AbortError') clear(feedback).append(errorBox(err));
    }
  };

  const act = async (a, what, reason) => {
    clear(feedback);
    try {
      const body = what === 'reject' ? { reason } : undefined;
      const res = await post(`/v1/approvals/${encodeURIComponent(a.id)}/${what}`, body, signal);
      open.delete(a.id);
      confirming.delete(a.id);
      const who = (claims() || {}).sub || '?';
      const msg = t(what === 'reject' ? 'approvals.rejected' : 'approvals.approved', { tool: a.plan.tool, status: codeText('approval_status', res.approval.status), who });
      const note = h('p', { class: 'notice', id: 'approval-result' }, msg);
      feedback.append(note);
      announce(msg);
      if (isGraphRun(a.plan) && res.approval.status !== 'pending') continueRun(runIdOf(a.plan.run_id), a.id, note, signal);
      latest = latest.filter((x) => x.id !== a.id || res.approval.status === 'pending');
      render();
    } catch (err) {
      if (err.name !== 'AbortError') feedback.append(errorBox(err));
    }
  };

  const ticker = setInterval(tick, 1000);
  signal.addEventListener('abort', () => clearInterval(ticker));

  follow('/v1/approvals/events', {
    signal,
    onState: (s, err) => {
      status.textContent = t(`approvals.stream_${s}`);
      status.className = `badge ${s === 'open' ? 'ok' : s === 'error' ? 'bad' : 'info'}`;
      if (err && (err.status === 403 || err.status === 401)) { clear(list).append(errorBox(err)); }
    },
    onEvent: (name, data) => {
      if (name === 'approvals') {
        latest = data.approvals || [];
        render();
        if (wanted && !shown && !asked && !latest.some((a) => a.id === wanted)) { asked = true; settled(); }
      }
      if (name === 'error') clear(feedback).append(errorBox(data.error || data));
    },
  });
}

// Whether the plan was made by a pipeline or workflow run of the console's Runs view (its run id is
// the run's thread, `{tenant}/{id}`); a call's own run (`run-…`, or an id its caller chose) is not.
function isGraphRun(plan) {
  return Boolean(plan.run_id) && plan.run_id.startsWith(`${plan.tenant}/`);
}

// A run paused on this plan (`approve_plan` naming the approval) is told to look again, so it
// goes on at once: executes the granted plan, or goes back to its advisor with the reason.
async function continueRun(runId, approvalId, note, signal) {
  try {
    const run = await get(`/v1/runs/${encodeURIComponent(runId)}`, signal);
    const waiting = (run.interrupts || []).find((i) => i.payload && i.payload.kind === 'approve_plan'
      && (i.payload.plan ? i.payload.plan.approval_id : i.payload.approval_id) === approvalId);
    if (run.status !== 'interrupted' || !waiting) return;
    await post(`/v1/runs/${encodeURIComponent(runId)}/resume`, { interrupt_id: waiting.id, value: {} }, signal);
    note.append(' ', h('a', { href: `#/runs/${encodeURIComponent(runId)}`, id: 'watch-run' }, t('approvals.watch_run')));
  } catch (err) {
    if (err.name !== 'AbortError') note.append(errorBox(err));
  }
}

function fillDiff(box, d) {
  clear(box);
  if (d.diff_error) { box.append(h('p', { class: 'notice' }, t('approvals.diff_error', { reason: d.diff_error }))); return; }
  if (!d.diff || !d.diff.length) {
    box.append(h('p', { class: 'muted no-state' }, d.compared === false ? t('desk.no_state') : t('desk.no_fields')));
    return;
  }
  const rows = d.diff.map((c) => {
    const same = JSON.stringify(c.current) === JSON.stringify(c.proposed);
    return h('tr', {},
      h('td', {}, h('code', {}, c.field)),
      h('td', { class: same ? '' : 'diff-del' }, JSON.stringify(c.current)),
      h('td', { class: same ? '' : 'diff-add' }, JSON.stringify(c.proposed)),
      h('td', {}, same ? t('approvals.unchanged') : t('approvals.changed')));
  });
  // ui.table: below 640 px each row becomes a card with every column labelled (nothing cut).
  box.append(table([t('approvals.field'), t('approvals.current'), t('approvals.proposed'), ''], rows));
}

// Who proposed the call: the agent and where its identity came from (the credential's claim or
// binding, or the pipeline that made the call; a name only the request gave is not the agent).
// Why the request waits, in the reader's language: each of the context's `why` codes worded from
// the dictionary; the gate's English sentence (marked lang="en") for a code this console does not
// know or a context without codes.
function whyList(ctx) {
  const reasons = Array.isArray(ctx.reasons) ? ctx.reasons : [];
  if (!reasons.length) return '—';
  const why = Array.isArray(ctx.why) && ctx.why.length === reasons.length ? ctx.why : [];
  return h('ul', { class: 'reasons' }, reasons.map((sentence, i) => {
    const w = why[i];
    const key = w && (w.code === 'tainted_run' && !w.source ? 'why.tainted_run_unknown' : `why.${w.code}`);
    const worded = w ? t(key, whyVars(w), '') : '';
    return worded ? h('li', { 'data-code': w.code }, worded) : h('li', { lang: 'en' }, sentence);
  }));
}

// A `why` item's values as the sentence shows them: levels and windows in the reader's words.
function whyVars(w) {
  const vars = { ...w };
  if (w.level) vars.level = codeText('level', w.level);
  if (Number.isFinite(w.window_s)) {
    vars.window = w.window_s % 3600 === 0 ? t('why.window_h', { n: w.window_s / 3600 }) : t('why.window_s', { n: w.window_s });
  }
  if (Number.isFinite(w.confidence)) vars.confidence = `${Math.round(w.confidence * 100)}%`;
  if (Number.isFinite(w.threshold)) vars.threshold = `${Math.round(w.threshold * 100)}%`;
  return vars;
}

function agentOf(ctx) {
  const a = ctx.agent;
  if (!a) return h('span', { class: 'agent muted' }, t('desk.agent_unknown'));
  const source = {
    claim: () => t('desk.agent_claim'),
    principal: () => t('desk.agent_principal'),
    pipeline: () => t('desk.agent_pipeline', { pipeline: a.pipeline || '?' }),
    request: () => t('desk.agent_request', { named: a.named_by_request || '?' }),
  }[a.source];
  const text = source ? source() : t('desk.agent_none');
  return h('span', { class: 'agent', 'data-source': a.source || 'none' },
    a.id ? h('strong', { class: 'agent-id' }, a.id) : null, a.id ? ' — ' : null, h('span', { class: 'agent-source', title: a.source || '' }, text));
}

// Other pending requests for the same change (same tool and canonical arguments), in other runs.
function sameChange(a) {
  const same = a.same_change || [];
  if (!same.length) return null;
  const items = same.map((o, i) => [i ? ', ' : ' ', h('a', { href: `#/approvals/${encodeURIComponent(o.id)}`, class: 'same-change-link' },
    t('desk.same_change_item', { id: o.id.slice(0, 8), run: runIdOf(o.run_id) || '—', who: o.requester }))]);
  return h('p', { class: 'notice same-change', 'data-n': String(same.length) }, t('desk.same_change', { n: same.length }), items);
}

// Expiry: a countdown that ticks every second, then the time in the console's language with the
// zone.
function expiry(iso) {
  const live = h('span', { class: 'countdown', 'data-expires': iso }, countdownText(iso));
  return h('span', { class: 'expiry' }, live, ' · ', h('span', { class: 'expires-at' }, time(iso)));
}

function countdownText(iso) {
  const left = Math.floor((new Date(iso).getTime() - Date.now()) / 1000);
  if (!(left > 0)) return t('desk.expired');
  const d = Math.floor(left / 86400); const hh = Math.floor((left % 86400) / 3600);
  const m = Math.floor((left % 3600) / 60); const sec = left % 60;
  const ko = lang() === 'ko';
  const unit = ko ? { d: '일', h: '시간', m: '분', s: '초' } : { d: 'd', h: 'h', m: 'min', s: 's' };
  const parts = [];
  if (d) parts.push(`${d}${ko ? '' : ' '}${unit.d}`);
  if (d || hh) parts.push(`${hh}${ko ? '' : ' '}${unit.h}`);
  if (!d) parts.push(`${m}${ko ? '' : ' '}${unit.m}`);
  if (!d && !hh) parts.push(`${sec}${ko ? '' : ' '}${unit.s}`);
  return t('desk.countdown_in', { left: parts.join(' ') });
}

function tick() {
  for (const el of document.querySelectorAll('.countdown[data-expires]')) {
    const text = countdownText(el.dataset.expires);
    if (el.textContent !== text) el.textContent = text;
    if (text === t('desk.expired')) el.classList.add('expired');
  }
}

const pct = (x) => (typeof x === 'number' ? `${Math.round(x * 100)}%` : '—');

// A pipeline's evidence: the anomaly, the chosen diagnosis, every candidate cause with its
// confidence, and the Advisor's reasoning.
function evidenceOf(ev) {
  if (!ev || typeof ev !== 'object') return null;
  const box = h('section', { class: 'evidence', 'data-pipeline': ev.pipeline || '' }, h('h3', {}, t('desk.evidence', { pipeline: ev.pipeline || '?' })));
  if (ev.omitted) { box.append(h('p', { class: 'muted' }, ev.omitted)); return box; }
  const pairs = [];
  if (ev.anomaly) pairs.push([t('desk.anomaly'), json(ev.anomaly)]);
  if (ev.diagnosis) {
    const by = ev.diagnosis.chosen_by;
    pairs.push([t('desk.diagnosis'), h('span', { class: 'diagnosis' }, t('desk.diagnosis_text', {
      cause: ev.diagnosis.cause, confidence: pct(ev.diagnosis.confidence), by: by ? t(`desk.chosen_by_${by}`, {}, by) : '—',
    }))]);
  }
  const advice = ev.advice || {};
  if (advice.reasoning) pairs.push([t('desk.advice'), advice.reasoning]);
  if (typeof advice.confidence === 'number') pairs.push([t('desk.advice_confidence'), pct(advice.confidence)]);
  box.append(facts(pairs));
  const candidates = Array.isArray(ev.candidates) ? ev.candidates : [];
  if (candidates.length) {
    box.append(h('h4', {}, t('desk.candidates')), h('div', { class: 'candidates' }, table([t('desk.cause'), t('desk.confidence'), t('desk.evidence_col')],
      candidates.map((c) => h('tr', { class: ev.diagnosis && ev.diagnosis.cause === c.cause ? 'chosen' : '' },
        h('td', {}, h('code', {}, c.cause)), h('td', { class: 'confidence' }, pct(c.confidence)),
        h('td', {}, Array.isArray(c.evidence) ? c.evidence.join('; ') : (c.evidence ? String(c.evidence) : '—')))))));
  }
  return box;
}

// The action-history rows that escalated the plan to approval.
function historyOf(hist) {
  if (!hist || typeof hist !== 'object') return null;
  const failures = Array.isArray(hist.failures) ? hist.failures : [];
  const box = h('section', { class: 'history' }, h('h3', {}, t('desk.history')),
    h('p', {}, t('desk.history_text', {
      tool: hist.tool, diagnosis: hist.diagnosis, class: hist.equipment_class, failures: failures.length, successes: hist.successes ?? 0,
    })));
  if (failures.length) {
    box.append(table([t('desk.when'), t('desk.equipment'), t('desk.outcome'), t('desk.note')],
      failures.map((f) => {
        const rating = f.rating || {};
        return h('tr', { class: 'history-row' },
          h('td', {}, time(f.executed_at)), h('td', {}, f.equipment || '—'),
          h('td', {}, rating.outcome ? codeBadge('verdict', rating.outcome, 'bad') : '—'), h('td', {}, rating.note || '—'));
      })));
  }
  return box;
}
