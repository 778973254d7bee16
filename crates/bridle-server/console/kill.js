// Kill switch: the switches covering my tenant (GET /v1/kill), stopping every call of my tenant
// or of one agent in it (POST /v1/kill, a reason and a confirmation step) with the unfinished
// work the answer lists, and lifting a switch with a reason (POST /v1/kill/lift). Which buttons
// are usable follows the token's scopes (kill:set, kill:lift); the server checks them again.
import { claims, get, hasScope, post } from './api.js';
import { t } from './i18n.js';
import { h, clear, badge, errorBox, table, field, time, announce, runIdOf, codeBadge } from './ui.js';

const AGENT = /^[A-Za-z0-9_.-]{1,64}$/;

function scopeText(s) {
  if (!s.tenant) return s.agent ? t('kill.scope_agent_everywhere', { agent: s.agent }) : t('kill.scope_global');
  return s.agent ? t('kill.scope_agent', { agent: s.agent, tenant: s.tenant }) : t('kill.scope_tenant', { tenant: s.tenant });
}

export function view(main, { signal }) {
  const canSet = hasScope('kill:set');
  const canLift = hasScope('kill:lift');
  const tenant = (claims() || {}).tenant || '?';
  main.append(h('h1', {}, t('kill.title')), h('p', {}, t('kill.help', { tenant })));
  if (!canSet && !canLift) {
    main.append(h('p', { class: 'panel', id: 'kill-no-scope' }, t('kill.no_scope')));
    return;
  }
  const feedback = h('div', { id: 'kill-feedback', role: 'status' });
  const active = h('div', { id: 'kill-active' }, h('p', { class: 'muted' }, t('common.loading')));
  const unfinished = h('div', { id: 'kill-unfinished' });

  const load = async () => {
    try {
      const r = await get('/v1/kill', signal);
      renderActive(r.switches || []);
    } catch (err) {
      if (err.name !== 'AbortError') clear(active).append(errorBox(err));
    }
  };

  const renderActive = (switches) => {
    clear(active);
    if (!switches.length) { active.append(h('p', { class: 'panel', id: 'kill-none' }, t('kill.none'))); return; }
    active.append(table([t('kill.scope'), t('kill.reason'), t('kill.set_by'), t('decisions.time'), ''],
      switches.map((s) => {
        const row = h('tr', { class: 'kill-switch', 'data-agent': s.agent || '', 'data-tenant': s.tenant || '' },
          h('td', {}, badge(scopeText(s), 'bad')), h('td', {}, s.reason), h('td', {}, s.set_by), h('td', {}, time(s.set_at)));
        // Global switches, and switches naming an agent in every tenant, are `bridle kill`'s.
        const mine = s.tenant === tenant;
        row.append(h('td', {}, mine
          ? h('button', { type: 'button', 'data-action': 'lift', disabled: !canLift, title: canLift ? null : t('kill.lift_needs_scope'), onclick: () => liftForm(s, row) }, t('kill.lift'))
          : h('span', { class: 'muted' }, t('kill.operator_only'))));
        return row;
      })));
    if (!canLift) active.append(h('p', { class: 'muted' }, t('kill.lift_needs_scope')));
  };

  const liftForm = (s, row) => {
    const old = document.getElementById('kill-lift-form');
    if (old) old.remove();
    const reason = h('textarea', { id: 'kill-lift-reason', rows: '2' });
    const form = h('form', { class: 'panel', id: 'kill-lift-form' },
      h('h2', {}, t('kill.lift_title', { scope: scopeText(s) })),
      field(t('kill.lift_reason'), reason),
      h('div', { class: 'row' },
        h('button', { type: 'submit', class: 'primary', 'data-action': 'confirm-lift' }, t('kill.confirm_lift')),
        h('button', { type: 'button', onclick: () => form.remove() }, t('common.cancel'))));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clear(feedback);
      if (!reason.value.trim()) {
        reason.setAttribute('aria-invalid', 'true'); reason.focus();
        feedback.append(errorBox({ code: 'bad_request', message: t('kill.reason_needed') }));
        return;
      }
      try {
        const body = { reason: reason.value.trim() };
        if (s.agent) body.agent = s.agent;
        const r = await post('/v1/kill/lift', body, signal);
        form.remove();
        clear(unfinished).classList.remove('panel');
        const msg = r.kill.changed ? t('kill.lifted', { scope: scopeText(s) }) : t('kill.not_on');
        feedback.append(h('p', { class: 'notice', id: 'kill-result' }, msg));
        announce(msg);
        load();
      } catch (err) { if (err.name !== 'AbortError') feedback.append(errorBox(err)); }
    });
    row.closest('.table-wrap').after(form);
    reason.focus();
  };

  main.append(h('h2', {}, t('kill.active')), active, feedback, unfinished);
  if (canSet) main.append(stopForm());
  else main.append(h('p', { class: 'panel muted' }, t('kill.set_needs_scope')));
  load();

  function stopForm() {
    const all = h('input', { type: 'radio', name: 'kill-scope', id: 'kill-scope-tenant', value: 'tenant', checked: true });
    const one = h('input', { type: 'radio', name: 'kill-scope', id: 'kill-scope-agent', value: 'agent' });
    const agent = h('input', { type: 'text', id: 'kill-agent', autocomplete: 'off', spellcheck: 'false' });
    const reason = h('textarea', { id: 'kill-reason', rows: '2' });
    const confirmBox = h('div', { id: 'kill-confirm' });
    const form = h('form', { class: 'panel', id: 'kill-form', 'aria-labelledby': 'kill-stop-title' },
      h('h2', { id: 'kill-stop-title' }, t('kill.stop_title')),
      h('fieldset', {}, h('legend', {}, t('kill.what')),
        h('div', { class: 'row choice' }, all, h('label', { for: all.id, class: 'inline' }, t('kill.stop_tenant', { tenant }))),
        h('div', { class: 'row choice' }, one, h('label', { for: one.id, class: 'inline' }, t('kill.stop_agent')))),
      field(t('kill.agent'), agent),
      field(t('kill.reason_label'), reason),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'danger', 'data-action': 'stop' }, t('kill.stop'))),
      confirmBox);
    agent.addEventListener('input', () => { if (agent.value) one.checked = true; });
    const fail = (control, message) => {
      control.setAttribute('aria-invalid', 'true'); control.focus();
      clear(confirmBox).append(errorBox({ code: 'bad_request', message }));
    };
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      clear(confirmBox); clear(feedback);
      reason.removeAttribute('aria-invalid'); agent.removeAttribute('aria-invalid');
      const byAgent = one.checked;
      const name = agent.value.trim();
      if (byAgent && !AGENT.test(name)) { fail(agent, t('kill.agent_needed')); return; }
      if (!reason.value.trim()) { fail(reason, t('kill.reason_needed')); return; }
      const scope = byAgent ? t('kill.scope_agent', { agent: name, tenant }) : t('kill.scope_tenant', { tenant });
      const yes = h('button', { type: 'button', class: 'danger', 'data-action': 'confirm-stop', onclick: () => stop(byAgent ? name : null, reason.value.trim()) }, t('kill.confirm_stop'));
      confirmBox.append(h('div', { class: 'notice', role: 'alertdialog', 'aria-labelledby': 'kill-confirm-text' },
        h('p', { id: 'kill-confirm-text' }, h('strong', {}, t('kill.confirm_text', { scope }))),
        h('div', { class: 'row' }, yes, h('button', { type: 'button', onclick: () => clear(confirmBox) }, t('common.cancel')))));
      yes.focus();
    });
    const stop = async (name, why) => {
      clear(confirmBox);
      try {
        const body = { reason: why };
        if (name) body.agent = name;
        const r = await post('/v1/kill', body, signal);
        const scope = scopeText(r.kill.switch);
        const msg = r.kill.changed ? t('kill.set', { scope }) : t('kill.already', { scope });
        feedback.append(h('p', { class: 'notice', id: 'kill-result' }, msg));
        announce(msg);
        reason.value = '';
        renderUnfinished(r.kill.unfinished || {});
        load();
      } catch (err) { if (err.name !== 'AbortError') feedback.append(errorBox(err)); }
    };
    return form;
  }

  function renderUnfinished(u) {
    clear(unfinished).classList.add('panel');
    unfinished.append(h('h2', {}, t('kill.unfinished')));
    const list = (key, items, headers, row) => {
      unfinished.append(h('h3', {}, t(`kill.${key}`, { n: items.length })));
      if (!items.length) { unfinished.append(h('p', { class: 'muted' }, t('kill.nothing'))); return; }
      unfinished.append(table(headers, items.map(row)));
    };
    const runLink = (thread) => h('a', { href: `#/runs/${encodeURIComponent(runIdOf(thread))}`, class: 'hash' }, runIdOf(thread));
    list('pending_approvals', u.pending_approvals || [], [t('kill.id'), t('decisions.tool'), t('approvals.requester')], (a) => h('tr', {},
      h('td', {}, h('a', { href: `#/approvals/${encodeURIComponent(a.id)}`, class: 'hash' }, a.id)),
      h('td', {}, (a.plan && a.plan.tool) || '—'), h('td', {}, a.requester || a.subject || '—')));
    list('jobs', u.jobs || [], [t('kill.id'), t('decisions.tool'), t('runs.status')], (j) => h('tr', {},
      h('td', { class: 'hash' }, j.id), h('td', {}, (j.plan && j.plan.tool) || '—'), h('td', {}, codeBadge('job_status', j.status, 'warn'))));
    list('paused_runs', u.paused_runs || [], [t('runs.id'), t('runs.pipeline'), t('runs.status'), t('runs.steps')], (r) => h('tr', {},
      h('td', {}, runLink(r.thread_id)), h('td', {}, r.graph || '—'), h('td', {}, h('span', { class: 'badge warn', title: r.status }, t(`runs.status_${r.status}`, {}, r.status))), h('td', {}, String(r.step))));
    list('cancelled_runs', u.cancelled_runs || [], [t('runs.id')], (thread) => h('tr', {}, h('td', {}, runLink(thread))));
  }
}
