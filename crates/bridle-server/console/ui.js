// Small DOM helpers: elements are built with createElement and text nodes only (never
// innerHTML with data), so nothing pasted or returned by the API can become markup.
import { t, lang } from './i18n.js';

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

export function announce(text) {
  const live = document.getElementById('live');
  if (live) { live.textContent = ''; setTimeout(() => { live.textContent = text; }, 30); }
}

let uid = 0;
export function id(prefix) { uid += 1; return `${prefix}-${uid}`; }

// A labelled control: returns [label, control].
export function field(labelText, control) {
  if (!control.id) control.id = id('f');
  return h('div', { class: 'field' }, h('label', { for: control.id }, labelText), control);
}

export function badge(text, kind = 'info') { return h('span', { class: `badge ${kind}` }, text); }

export function verdictKind(v) {
  const s = String(v || '').toLowerCase();
  if (['ok', 'allow', 'allowed', 'executed', 'granted', 'pass', 'done', 'safe', 'intact', 'accepted', 'succeeded', 'reported'].includes(s)) return 'ok';
  if (['rejected', 'deny', 'denied', 'blocked', 'fail', 'failed', 'error', 'critical', 'broken', 'refused', 'unsafe', 'compromised', 'followed'].includes(s)) return 'bad';
  if (['pending', 'require_approval', 'interrupted', 'warning', 'degraded', 'running', 'partial', 'no_mention', 'approval_required'].includes(s)) return 'warn';
  return 'info';
}

export function json(value) { return h('pre', {}, JSON.stringify(value, null, 2)); }

export function errorBox(err) {
  const code = err && err.code ? err.code : 'error';
  const msg = err && err.message ? err.message : String(err);
  return h('div', { class: 'error-box', role: 'alert' }, h('strong', {}, code), ': ', msg);
}

// A date and time in the console's language, with the browser's time zone named (say
// "3 Dec 2026, 21:20:23 UTC" or "2026. 12. 3. 오후 9:20:23 UTC").
export function time(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  // (dateStyle cannot be combined with timeZoneName: the parts are named one by one.)
  return d.toLocaleString(lang() === 'ko' ? 'ko-KR' : 'en-GB', {
    year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
  });
}

export function facts(pairs) {
  const dl = h('dl', { class: 'facts' });
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(h('dt', {}, k), h('dd', {}, v instanceof Node ? v : String(v ?? '')));
  }
  return dl;
}

// A table that becomes stacked cards on a narrow screen: each cell carries its column's header
// as `data-label`, which app.css shows beside the value below 640 px.
export function table(headers, rows) {
  const body = h('tbody', {}, rows);
  for (const tr of body.rows) {
    [...tr.cells].forEach((td, i) => { if (headers[i] !== undefined) td.dataset.label = String(headers[i]); });
  }
  return h('div', { class: 'table-wrap', tabindex: '0' },
    h('table', {},
      h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
      body));
}

// A copy button: the clipboard when the browser allows it, else the text is selected.
export function copyButton(getText, target) {
  return h('button', {
    type: 'button',
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(getText());
        announce(t('common.copied'));
      } catch {
        if (target && target.select) { target.focus(); target.select(); }
        announce(t('common.copy_select'));
      }
    },
  }, t('common.copy'));
}

// Tabs with the ARIA pattern (arrow keys move between tabs).
export function tabs(labels, selected, onSelect) {
  const list = h('div', { class: 'tabs', role: 'tablist' });
  labels.forEach(([key, label], i) => {
    const tab = h('button', {
      type: 'button', role: 'tab', id: `tab-${key}`, 'aria-selected': key === selected ? 'true' : 'false',
      tabindex: key === selected ? '0' : '-1', 'aria-controls': 'tabpanel',
      onclick: () => onSelect(key),
      onkeydown: (e) => {
        const n = labels.length;
        let j = null;
        if (e.key === 'ArrowRight') j = (i + 1) % n;
        if (e.key === 'ArrowLeft') j = (i + n - 1) % n;
        if (j !== null) { e.preventDefault(); onSelect(labels[j][0], true); }
      },
    }, label);
    list.append(tab);
  });
  return list;
}

// A run id from a plan's or record's run id, which is the thread id `{tenant}/{run id}` for
// runs started over HTTP.
export function runIdOf(value) {
  const s = String(value || '');
  return s.includes('/') ? s.slice(s.lastIndexOf('/') + 1) : s;
}

// Approving that no single keypress can do: Approve opens a confirmation, Enter never approves
// (only a click, or Space on the focused button), and a sign-off or a destructive plan needs the
// tool's name typed before Confirm is enabled. `state` ({ open, typed }) is the caller's, so an
// open confirmation survives a live re-render; `key` makes the element ids stable.
export function approveControl({ key, tool, strong, label, disabled, onConfirm, state }) {
  const noEnter = (e) => { if (e.key === 'Enter') e.preventDefault(); };
  const box = h('div', { class: 'approve-control', 'data-id': key });
  const draw = () => {
    clear(box);
    if (!state.open) {
      box.append(h('button', {
        type: 'button', class: 'primary', 'data-action': 'approve', id: `approve-${key}`, disabled: disabled ? true : null,
        onkeydown: noEnter,
        onclick: () => {
          state.open = true; draw();
          const next = box.querySelector('[data-action="confirm-name"]') || box.querySelector('[data-action="cancel-approve"]');
          if (next) next.focus();
        },
      }, label));
      return;
    }
    const confirm = h('button', {
      type: 'button', class: 'primary', 'data-action': 'confirm-approve', id: `confirm-approve-${key}`, onkeydown: noEnter,
      onclick: () => { if (!confirm.disabled) onConfirm(); },
    }, t('approvals.confirm_approve'));
    box.append(h('p', { class: 'confirm-text' }, t(strong ? 'approvals.confirm_strong' : 'approvals.confirm_text', { tool })));
    if (strong) {
      const typed = h('input', {
        type: 'text', id: `confirm-name-${key}`, 'data-action': 'confirm-name', value: state.typed || '',
        autocomplete: 'off', spellcheck: 'false', onkeydown: noEnter,
      });
      const sync = () => { state.typed = typed.value; confirm.disabled = typed.value.trim() !== tool; };
      typed.addEventListener('input', sync);
      sync();
      box.append(h('label', { for: typed.id }, t('approvals.type_to_confirm', { tool })), typed);
    }
    box.append(h('div', { class: 'row' }, confirm, h('button', {
      type: 'button', 'data-action': 'cancel-approve', id: `cancel-approve-${key}`,
      onclick: () => { state.open = false; state.typed = ''; draw(); },
    }, t('common.cancel'))));
  };
  draw();
  return box;
}

// A stable code (a level, a status, a verdict, an audit kind) in the console's language: the
// dictionary's `{group}.{code}`, else the code itself. `codeBadge` keeps the raw code as the
// badge's title and `data-code`, for operators who search logs by it.
export function codeText(group, code) {
  return code === undefined || code === null || code === '' ? '—' : t(`${group}.${code}`, {}, String(code));
}

export function codeBadge(group, code, kind) {
  const b = badge(codeText(group, code), kind || verdictKind(code));
  if (code !== undefined && code !== null) { b.title = String(code); b.dataset.code = String(code); }
  return b;
}
