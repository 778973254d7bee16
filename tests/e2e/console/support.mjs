// Shared by every *.test.mjs here: the environment run.sh exports, one browser per test file,
// pages that record console and page errors (each test fails on any), the overflow check and the
// 390/1280 px screenshots, and a JSON helper for the API.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const BASE = process.env.BRIDLE_URL;
export const OPERATOR = process.env.BRIDLE_OPERATOR_TOKEN;
export const REQUESTER = process.env.BRIDLE_REQUESTER_TOKEN;
export const FAB = process.env.BRIDLE_FAB_URL;
export const FAB_CHOICE = process.env.BRIDLE_FAB_CHOICE_URL;
export const FAB_AGENT = process.env.BRIDLE_FAB_AGENT_TOKEN;
export const FAB_OPERATOR = process.env.BRIDLE_FAB_OPERATOR_TOKEN;
export const REPLAY_REPORT = process.env.BRIDLE_REPLAY_REPORT;
export const REPLAY_AB_REPORT = process.env.BRIDLE_REPLAY_AB_REPORT;
export const OUT = process.env.BRIDLE_E2E_OUT || 'test-output';
const CHROMIUM = process.env.BRIDLE_CHROMIUM || '/usr/bin/chromium';
export const WIDTHS = [390, 1280];
const TIMEOUT = 15000;

let browser;
const problems = [];

/** Forgets recorded problems that `expected` matches (say, the 401 of a refused token). */
export function forgive(expected) {
  const keep = problems.filter((x) => !expected(x));
  problems.length = 0;
  problems.push(...keep);
}

before(async () => {
  assert.ok(BASE && OPERATOR && REQUESTER, 'run through run.sh (BRIDLE_URL and tokens)');
  mkdirSync(OUT, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
});

after(async () => { if (browser) await browser.close(); });

afterEach(() => {
  const seen = problems.splice(0);
  assert.deepEqual(seen, [], `console errors or page errors:\n${seen.join('\n')}`);
});

/** A page in a fresh context; `timezoneId` (say, 'Asia/Seoul') sets the browser's zone. */
export async function page(width = 1280, { timezoneId } = {}) {
  const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: 'light', ...(timezoneId ? { timezoneId } : {}) });
  const p = await context.newPage();
  p.setDefaultTimeout(TIMEOUT);
  p.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return p;
}

export async function signIn(p, token = OPERATOR, hash = '#/approvals', base = BASE) {
  await p.goto(`${base}/${hash}`);
  await p.fill('#token', token);
  await p.click('#signin');
  await p.waitForSelector('#whoami');
}

export async function noOverflow(p, what) {
  const [scroll, inner] = await p.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(scroll <= inner, `${what}: horizontal overflow (${scroll} > ${inner})`);
}

export async function shoot(p, name) {
  for (const width of WIDTHS) {
    await p.setViewportSize({ width, height: 900 });
    await p.waitForTimeout(50);
    await noOverflow(p, `${name} at ${width} px`);
    await p.screenshot({ path: `${OUT}/${name}-${width}.png`, fullPage: true });
  }
  await p.setViewportSize({ width: 1280, height: 900 });
}

export async function api(method, path, token, body, base = BASE) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: await r.json() };
}

// The requester's run for its scale calls: the plan an approval binds includes the run id, so the
// identical call after an approval names the same run (without one, the server mints a new run).
export const SCALE_RUN = 'run-console';

// A scale_replicas call that needs an approval: returns the approval id.
export async function requestScale(replicas) {
  const r = await api('POST', '/v1/calls', REQUESTER, { tool: 'scale_replicas', arguments: { service: 'checkout', replicas, resource_version: 7 }, run_id: SCALE_RUN });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.rejection.code, 'approval_required', JSON.stringify(r.body));
  return r.body.approval_id;
}
