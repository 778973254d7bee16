// The operator chat (seed 000's AI chat) over POST /v1/chat, streamed as Server-Sent Events: the
// operator's message, each tool call as the gate decides it (executed, waiting for approval with
// a link to the request, refused with its code), then the answer, or the fixed text of a message
// the input guard blocked or an answer the output guard withheld. The conversation id the server
// answers is kept for the page's session only; "New conversation" forgets it. Ctrl+Enter sends.
import { hasScope, stream } from './api.js';
import { t } from './i18n.js';
import { h, clear, badge, errorBox, announce, codeText } from './ui.js';

const MAX = 2000;
let conversation = null;

const VERDICT_KIND = { executed: 'ok', waiting_for_approval: 'warn', refused: 'bad', dry_run: 'info' };

function callLine(c) {
  const verdict = badge(t(`chat.verdict.${c.verdict}`, {}, c.verdict), VERDICT_KIND[c.verdict] || 'info');
  verdict.dataset.verdict = c.verdict;
  const parts = [h('code', {}, c.tool), ' ', verdict];
  if (c.code) parts.push(' ', h('span', { class: 'muted', title: c.code }, codeText('code', c.code)));
  if (c.approval_id) {
    parts.push(' ', h('a', { href: `#/approvals/${encodeURIComponent(c.approval_id)}` }, t('chat.open_approval')));
  }
  return h('li', { class: 'chat-call' }, ...parts);
}

export function view(main, { signal }) {
  main.append(h('h1', {}, t('chat.title')), h('p', { class: 'muted' }, t('chat.help')));
  if (!hasScope('chat:use')) {
    main.append(h('p', { class: 'panel', id: 'chat-no-scope' }, t('chat.no_scope')));
    return;
  }
  const log = h('ol', { id: 'chat-log', class: 'chat-log', 'aria-live': 'polite', 'aria-label': t('chat.log') });
  const box = h('textarea', { id: 'chat-message', rows: '3', maxlength: String(MAX), required: true });
  const send = h('button', { type: 'submit', class: 'primary', id: 'chat-send' }, t('chat.send'));
  const fresh = h('button', {
    type: 'button',
    id: 'chat-new',
    onclick: () => { conversation = null; clear(log); announce(t('chat.new_started')); box.focus(); },
  }, t('chat.new'));
  const label = h('label', { for: 'chat-message' }, t('chat.message'));
  const form = h('form', { class: 'panel chat-form', id: 'chat-form' },
    label, box, h('p', { class: 'muted' }, t('chat.hint')), h('div', { class: 'row' }, send, fresh));

  const turn = async (message) => {
    log.append(h('li', { class: 'chat-msg operator' }, h('strong', {}, t('chat.you')), h('p', {}, message)));
    const calls = h('ul', { class: 'chat-calls' });
    const text = h('p', { class: 'muted' }, t('chat.thinking'));
    const status = h('span', {});
    const reply = h('li', { class: 'chat-msg assistant', 'aria-busy': 'true' },
      h('div', { class: 'row' }, h('strong', { class: 'grow' }, t('chat.assistant')), status), calls, text);
    log.append(reply);
    send.disabled = true;
    try {
      await stream('/v1/chat', conversation ? { message, conversation_id: conversation } : { message }, {
        signal,
        onEvent: (name, data) => {
          if (name === 'tool_call') calls.append(callLine(data));
          else if (name === 'answer') {
            conversation = data.conversation_id;
            clear(calls);
            for (const c of data.tool_calls || []) calls.append(callLine(c));
            text.className = data.status === 'answered' ? '' : 'chat-refusal';
            text.textContent = data.text;
            if (data.status !== 'answered') {
              const b = badge(`${t(`chat.status.${data.status}`)}: ${codeText('code', data.code)}`,
                data.status === 'blocked' ? 'bad' : 'warn');
              b.dataset.code = data.code || '';
              b.title = data.code || '';
              status.append(b);
            }
            reply.dataset.status = data.status;
            announce(data.status === 'answered' ? t('chat.answered') : t(`chat.status.${data.status}`));
          } else if (name === 'error') {
            text.replaceWith(errorBox((data && data.error) || data));
          }
        },
      });
    } catch (err) {
      if (err.name !== 'AbortError') text.replaceWith(errorBox(err));
    } finally {
      reply.removeAttribute('aria-busy');
      send.disabled = false;
    }
  };

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const message = box.value.trim();
    if (!message || send.disabled) return;
    box.value = '';
    turn(message);
    box.focus();
  });
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
  });
  main.append(log, form);
}
