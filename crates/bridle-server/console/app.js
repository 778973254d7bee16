// The console's shell: sign-in, navigation (a hash router), language, theme and font size.
// Preferences live in localStorage; the token lives in sessionStorage only.
import { claims, setToken, signOut, token, get } from './api.js';
import { t, lang, setLang, LANGS } from './i18n.js';
import { h, clear, field, errorBox, announce } from './ui.js';
import * as approvals from './approvals.js';
import * as runs from './runs.js';
import * as decisions from './decisions.js';
import * as drift from './drift.js';
import * as workbench from './workbench.js';
import * as kill from './kill.js';
import * as chat from './chat.js';

const VIEWS = [
  ['approvals', 'nav.approvals', approvals],
  ['runs', 'nav.runs', runs],
  ['decisions', 'nav.decisions', decisions],
  ['drift', 'nav.drift', drift],
  ['workbench', 'nav.workbench', workbench],
  ['kill', 'nav.kill', kill],
  ['chat', 'nav.chat', chat],
];

let current = null; // AbortController of the view on screen

function prefs() {
  return {
    theme: localStorage.getItem('bridle.theme') || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'),
    font: Number(localStorage.getItem('bridle.font') || '100'),
  };
}

function applyPrefs() {
  const p = prefs();
  document.documentElement.dataset.theme = p.theme;
  document.documentElement.style.fontSize = `${p.font}%`;
  document.documentElement.lang = lang();
  document.title = t('app.title');
}

function renderPrefs() {
  const box = clear(document.getElementById('prefs'));
  const p = prefs();
  const langSel = h('select', { id: 'lang', 'aria-label': t('prefs.language') },
    LANGS.map(([code, name]) => h('option', { value: code, selected: code === lang() }, name)));
  langSel.addEventListener('change', () => { setLang(langSel.value); applyPrefs(); renderAll(); announce(t('prefs.language_set')); });
  const themeBtn = h('button', {
    type: 'button', id: 'theme', 'aria-pressed': p.theme === 'dark' ? 'true' : 'false',
    onclick: () => {
      localStorage.setItem('bridle.theme', prefs().theme === 'dark' ? 'light' : 'dark');
      applyPrefs(); renderPrefs();
      document.getElementById('theme').focus();
    },
  }, t('prefs.dark'));
  const font = (delta) => () => {
    const next = Math.min(150, Math.max(80, prefs().font + delta));
    localStorage.setItem('bridle.font', String(next));
    applyPrefs(); announce(`${next}%`);
  };
  box.append(
    langSel, themeBtn,
    h('button', { type: 'button', id: 'font-down', 'aria-label': t('prefs.font_smaller'), onclick: font(-10) }, 'A−'),
    h('button', { type: 'button', id: 'font-up', 'aria-label': t('prefs.font_larger'), onclick: font(10) }, 'A+'),
  );
  if (token()) {
    const c = claims() || {};
    box.append(
      h('span', { class: 'muted', id: 'whoami' }, `${c.sub || '?'} @ ${c.tenant || '?'}`),
      h('button', { type: 'button', id: 'signout', onclick: () => { signOut(); renderAll(); } }, t('auth.sign_out')),
    );
  }
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [pathPart, queryPart = ''] = raw.split('?');
  const parts = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(queryPart) };
}

function renderNav(active) {
  const nav = clear(document.getElementById('nav'));
  nav.setAttribute('aria-label', t('nav.label'));
  if (!token()) return;
  for (const [key, label] of VIEWS) {
    nav.append(h('a', { href: `#/${key}`, 'aria-current': key === active ? 'page' : null }, t(label)));
  }
}

function renderSignIn(main) {
  const area = h('textarea', { id: 'token', rows: '4', autocomplete: 'off', spellcheck: 'false' });
  const errors = h('div');
  const form = h('form', { class: 'panel signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, t('auth.title')),
    h('p', {}, t('auth.help')),
    h('pre', {}, 'bridle token issue --subject operator-2 --tenant tenant-a --services checkout \\\n  --scopes approval:grant,audit:read,runs:read,runs:start --ttl 8h'),
    field(t('auth.token'), area),
    errors,
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary', id: 'signin' }, t('auth.sign_in'))),
    h('p', { class: 'muted' }, t('auth.storage')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(errors);
    setToken(area.value);
    try {
      // Any /v1 route tells whether the token is accepted (401 otherwise); tools needs no scope.
      await get('/v1/tools');
      if (!location.hash || location.hash === '#/' || location.hash === '#') history.replaceState(null, '', '/#/approvals');
      renderAll();
    } catch (err) {
      if (err.status === 401) { signOut(); errors.append(errorBox(err)); } else { renderAll(); }
    }
  });
  main.append(form);
  area.focus();
}

function route() {
  if (current) current.abort();
  current = new AbortController();
  const main = clear(document.getElementById('main'));
  const { parts, query } = parseHash();
  if (!token()) {
    renderNav(null);
    renderSignIn(main);
    return;
  }
  const key = parts[0] || 'approvals';
  const found = VIEWS.find(([k]) => k === key);
  renderNav(found ? key : null);
  if (!found) {
    main.append(h('h1', {}, t('common.not_found')));
    return;
  }
  try {
    found[2].view(main, { signal: current.signal, parts: parts.slice(1), query });
  } catch (err) {
    main.append(errorBox(err));
  }
}

function renderAll() {
  applyPrefs();
  document.getElementById('skip-link').textContent = t('app.skip');
  renderPrefs();
  route();
}

// `/approvals/{id}` (the approval URL MCP clients are given) opens that request here.
const deep = location.pathname.match(/^\/approvals\/([^/]+)$/);
if (deep) history.replaceState(null, '', `/#/approvals/${deep[1]}`);

window.addEventListener('hashchange', route);
window.addEventListener('unhandledrejection', (e) => {
  if (e.reason && e.reason.name === 'AbortError') e.preventDefault();
});
renderAll();
