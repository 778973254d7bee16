// Approvals: the tenant's pending plans, live from GET /v1/approvals/events; each with its
// arguments, diff against the current state, plan hash, requester, level and expiry; approve
// (or sign off) through a confirmation no single keypress can pass, or reject with a reason.
import { follow, get, post, claims } from './api.js';
import { t } from './i18n.js';
import { h, clear, badge, facts, json, errorBox, time, announce, id, runIdOf, approveControl } from './ui.js';

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
    const section = h('section', { class: 'panel approval', 'aria-labelledby': titleId, 'data-id': a.id },
      h('div', { class: 'row' },
        h('h2', { id: titleId, class: 'grow', tabindex: '-1' }, a.plan.tool),
        a.risk ? badge(t(`risk.${a.risk}`), a.risk === 'destructive' ? 'bad' : 'info') : null,
        badge(a.level, 'warn'), badge(a.status, 'info')),
      facts([
        [t('approvals.why'), (a.context && Array.isArray(a.context.reasons) && a.context.reasons.length)
          ? h('ul', { class: 'reasons' }, a.context.reasons.map((r) => h('li', {}, r))) : '—'],
        [t('approvals.requester'), a.requester],
        [t('approvals.plan_hash'), h('span', { class: 'hash' }, a.plan_hash)],
        [t('approvals.expires'), time(a.expires_at)],
        [t('approvals.grants'), (a.grants || []).map((g) => g.approver || JSON.stringify(g)).join(', ') || '—'],
        [t('approvals.run'), !a.plan.run_id ? '—' : isGraphRun(a.plan)
          ? h('a', { href: `#/runs/${encodeURIComponent(runIdOf(a.plan.run_id))}` }, runIdOf(a.plan.run_id))
          : h('a', { href: `#/runs/${encodeURIComponent(a.plan.run_id)}` }, a.plan.run_id)],
      ]),
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
      const msg = t(what === 'reject' ? 'approvals.rejected' : 'approvals.approved', { tool: a.plan.tool, status: res.approval.status, who });
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
  if (!d.diff || !d.diff.length) { box.append(h('p', { class: 'muted' }, t('approvals.no_diff'))); return; }
  const rows = d.diff.map((c) => {
    const same = JSON.stringify(c.current) === JSON.stringify(c.proposed);
    return h('tr', {},
      h('td', {}, h('code', {}, c.field)),
      h('td', { class: same ? '' : 'diff-del' }, JSON.stringify(c.current)),
      h('td', { class: same ? '' : 'diff-add' }, JSON.stringify(c.proposed)),
      h('td', {}, same ? t('approvals.unchanged') : t('approvals.changed')));
  });
  box.append(h('div', { class: 'table-wrap', tabindex: '0' }, h('table', {},
    h('caption', { class: 'sr-only' }, t('approvals.diff')),
    h('thead', {}, h('tr', {}, [t('approvals.field'), t('approvals.current'), t('approvals.proposed'), ''].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows))));
}
