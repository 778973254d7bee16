// The /v1 API with the operator's bearer token (kept in sessionStorage only), and Server-Sent
// Events read through fetch so the token goes in the Authorization header, never in a URL.

const KEY = 'bridle.token';

export function token() { return sessionStorage.getItem(KEY) || ''; }
export function setToken(value) { sessionStorage.setItem(KEY, value.trim()); }
export function signOut() { sessionStorage.removeItem(KEY); }

// The token's claims (display only: the server verifies it).
export function claims() {
  const part = token().split('.')[1];
  if (!part) return null;
  try {
    const text = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

// Whether the token carries a scope (display only: which controls are usable; the server checks).
export function hasScope(scope) {
  const c = claims() || {};
  const list = Array.isArray(c.scopes) ? c.scopes : String(c.scopes || '').split(/[ ,]+/);
  return list.includes(scope);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  if (token()) h.Authorization = `Bearer ${token()}`;
  return h;
}

export async function api(method, path, body, signal) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network_error', String(e.message || e));
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!response.ok) {
    const err = json && json.error ? json.error : { code: `http_${response.status}`, message: text.slice(0, 300) };
    throw new ApiError(response.status, err.code, err.message);
  }
  return json;
}

export const get = (path, signal) => api('GET', path, undefined, signal);
export const post = (path, body, signal) => api('POST', path, body, signal);

// Follows an SSE stream: calls onEvent(name, data) for each event, onState('open'|'closed'|
// 'error', err) as the connection changes, and reconnects after a pause unless `signal` aborts
// or `once` is set (a stream that ends by itself, like a run's).
export async function follow(path, { signal, onEvent, onState = () => {}, once = false }) {
  let delay = 1000;
  while (!signal.aborted) {
    try {
      const response = await fetch(path, { headers: headers({ Accept: 'text/event-stream' }), signal });
      if (!response.ok) {
        let err = { code: `http_${response.status}`, message: '' };
        try { err = (await response.json()).error || err; } catch { /* not JSON */ }
        onState('error', new ApiError(response.status, err.code, err.message));
        if (response.status === 401 || response.status === 403 || response.status === 404) return;
      } else {
        onState('open');
        delay = 1000;
        await readEvents(response.body, onEvent);
        onState('closed');
        if (once) return;
      }
    } catch (e) {
      if (signal.aborted || e.name === 'AbortError') return;
      onState('error', new ApiError(0, 'network_error', String(e.message || e)));
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 15000);
  }
}

// One POST whose answer is an SSE stream that ends by itself (a chat turn): calls onEvent(name,
// data) for each event; a refused request throws its ApiError like `api` does.
export async function stream(path, body, { signal, onEvent }) {
  let response;
  try {
    response = await fetch(path, {
      method: 'POST',
      headers: headers({ Accept: 'text/event-stream', 'Content-Type': 'application/json' }),
      body: JSON.stringify(body),
      signal,
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network_error', String(e.message || e));
  }
  if (!response.ok) {
    let err = { code: `http_${response.status}`, message: '' };
    try { err = (await response.json()).error || err; } catch { /* not JSON */ }
    throw new ApiError(response.status, err.code, err.message);
  }
  await readEvents(response.body, onEvent);
}

async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, '\n');
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') name = val;
        else if (field === 'data') data.push(val);
      }
      if (data.length) {
        let parsed;
        try { parsed = JSON.parse(data.join('\n')); } catch { parsed = data.join('\n'); }
        onEvent(name, parsed);
      }
    }
  }
}
