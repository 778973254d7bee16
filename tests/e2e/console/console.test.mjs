// Browser tests of the console served by a real `bridle serve` (started by run.sh): Debian's
// chromium driven by playwright-core, through support.mjs. Each test fails on any console error,
// page error or horizontal overflow; screenshots at 390 and 1280 px go to $BRIDLE_E2E_OUT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import {
  BASE, OPERATOR, REQUESTER, FAB, FAB_CHOICE, FAB_AGENT, FAB_OPERATOR, REPLAY_REPORT, REPLAY_AB_REPORT,
  forgive, page, signIn, shoot, api, SCALE_RUN, requestScale,
} from './support.mjs';

test('both dictionaries hold the same keys, and every key the views name exists', () => {
  const dir = new URL('../../../crates/bridle-server/console/', import.meta.url);
  const i18n = readFileSync(new URL('i18n.js', dir), 'utf8');
  const block = (name) => {
    const start = i18n.indexOf(`const ${name} = {`);
    const end = i18n.indexOf('\n};', start);
    return new Set([...i18n.slice(start, end).matchAll(/^ {2}'([a-z_.]+)':/gm)].map((m) => m[1]));
  };
  const en = block('en');
  const ko = block('ko');
  assert.ok(en.size > 100, `${en.size} keys`);
  assert.deepEqual([...en].filter((k) => !ko.has(k)), [], 'missing in ko');
  assert.deepEqual([...ko].filter((k) => !en.has(k)), [], 'missing in en');
  const used = new Set();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
    for (const m of readFileSync(new URL(file, dir), 'utf8').matchAll(/\bt\('([a-z_.]+)'/g)) used.add(m[1]);
  }
  assert.deepEqual([...used].filter((k) => !en.has(k)), [], 'named by a view but not in the dictionaries');
});

test('the static assets are served without a token, with a strict CSP; /v1 still needs one', async () => {
  for (const path of ['/', '/console/app.js', '/console/app.css', '/console/i18n.js']) {
    const r = await fetch(`${BASE}${path}`);
    assert.equal(r.status, 200, path);
    const csp = r.headers.get('content-security-policy');
    assert.match(csp, /script-src 'self'/, path);
    assert.doesNotMatch(csp, /unsafe-inline/, path);
    assert.ok(r.headers.get('etag'), path);
  }
  assert.match((await fetch(`${BASE}/console/app.js`)).headers.get('content-type'), /javascript/);
  assert.equal((await fetch(`${BASE}/v1/approvals`)).status, 401);
});

test('sign in refuses a bad token and accepts a good one; keyboard reaches the form', async () => {
  const p = await page();
  await p.goto(`${BASE}/`);
  await shoot(p, 'signin');
  await p.keyboard.press('Tab');
  await p.fill('#token', 'not-a-token');
  await p.click('#signin');
  await p.waitForSelector('.error-box');
  assert.match(await p.textContent('.error-box'), /unauthenticated/);
  // The refused token's 401 is a console "Failed to load resource" line from the browser itself.
  forgive((x) => x.includes('401'));
  await p.fill('#token', OPERATOR);
  await p.press('#token', 'Tab');
  await p.keyboard.press('Enter');
  await p.waitForSelector('#whoami');
  assert.match(await p.textContent('#whoami'), /operator-2 @ tenant-a/);
  // Keyboard: the skip link comes first, then the navigation, each with a visible focus ring.
  await p.evaluate(() => document.activeElement && document.activeElement.blur());
  await p.keyboard.press('Tab');
  assert.equal(await p.evaluate(() => document.activeElement.id), 'skip-link');
  await p.keyboard.press('Tab');
  const focused = await p.evaluate(() => {
    const el = document.activeElement;
    const style = getComputedStyle(el);
    return { text: el.textContent, outline: style.outlineStyle, width: parseFloat(style.outlineWidth) };
  });
  assert.equal(focused.text, 'Approvals');
  assert.ok(focused.outline !== 'none' && focused.width >= 2, JSON.stringify(focused));
  assert.equal(await p.evaluate(() => localStorage.getItem('bridle.token')), null, 'token not in localStorage');
  await p.context().close();
});

test('a pending plan appears live; approving it lets the identical call run', async () => {
  const p = await page();
  await signIn(p);
  await p.waitForSelector('#approvals-stream.ok');
  const id = await requestScale(3);
  const card = `section.approval[data-id="${id}"]`;
  await p.waitForSelector(card);
  await p.waitForSelector(`${card} .diff table`);
  const text = await p.textContent(card);
  assert.match(text, /scale_replicas/);
  assert.match(text, /requester-1/);
  assert.match(text, /default level/, 'the card says why approval is needed');
  await shoot(p, 'approvals');
  // Enter on the focused Approve button decides nothing: it stays one button, the plan pending.
  await p.focus(`${card} button[data-action="approve"]`);
  await p.keyboard.press('Enter');
  assert.equal(await p.$(`${card} button[data-action="confirm-approve"]`), null, 'Enter opened the confirmation');
  // Space opens the confirmation; Enter on Confirm still decides nothing; a click does.
  await p.keyboard.press('Space');
  await p.waitForSelector(`${card} button[data-action="confirm-approve"]`);
  await p.focus(`${card} button[data-action="confirm-approve"]`);
  await p.keyboard.press('Enter');
  assert.equal((await api('GET', `/v1/approvals/${id}`, OPERATOR)).body.approval.status, 'pending', 'Enter approved');
  await shoot(p, 'approvals-confirm');
  await p.click(`${card} button[data-action="confirm-approve"]`);
  await p.waitForSelector('#approval-result');
  assert.match(await p.textContent('#approval-result'), /approved by operator-2/);
  await p.waitForSelector(card, { state: 'detached' });
  const shown = await api('GET', `/v1/approvals/${id}`, OPERATOR);
  assert.equal(shown.body.approval.status, 'granted');
  const retried = await api('POST', '/v1/calls', REQUESTER, { tool: 'scale_replicas', arguments: { service: 'checkout', replicas: 3, resource_version: 7 }, run_id: SCALE_RUN });
  assert.equal(retried.body.status, 'ok', JSON.stringify(retried.body));
  // The link opened again after the decision says what became of the request, and who decided.
  await p.goto(`${BASE}/approvals/${id}`);
  await p.waitForSelector('#approval-settled');
  assert.match(await p.textContent('#approval-settled'), /approved by operator-2 .*the approved call has run/);
  await p.context().close();
});

test('rejecting needs a reason, and the reason is kept', async () => {
  const p = await page(390);
  await signIn(p);
  const id = await requestScale(4);
  const card = `section.approval[data-id="${id}"]`;
  // The approval URL an MCP client is given opens that request.
  await p.goto(`${BASE}/approvals/${id}`);
  await p.waitForSelector(`${card}.wanted`);
  // The deep link focuses the request's title, never a button: Enter there decides nothing.
  assert.equal(await p.evaluate(() => document.activeElement.tagName), 'H2');
  await p.keyboard.press('Enter');
  assert.equal((await api('GET', `/v1/approvals/${id}`, OPERATOR)).body.approval.status, 'pending');
  await p.click(`${card} button[data-action="reject"]`);
  await p.click(`${card} button[data-action="confirm-reject"]`);
  await p.waitForSelector('#approval-feedback .error-box');
  await p.fill(`#reason-${id}`, 'not during the freeze');
  await p.click(`${card} button[data-action="confirm-reject"]`);
  await p.waitForSelector('#approval-result');
  const shown = await api('GET', `/v1/approvals/${id}`, OPERATOR);
  assert.equal(shown.body.approval.status, 'rejected');
  assert.equal(shown.body.approval.rejection_reason, 'not during the freeze');
  await p.context().close();
});

async function startFab(base) {
  const body = { pipeline: 'fab', input: { anomaly: { equipment: 'etch-01', metric: 'chamber_temp_c', value: 388 }, incident: 'inc-console' } };
  const r = await api('POST', '/v1/runs', FAB_AGENT, body, base);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.run_id;
}

test('a fab plan rejected with a reason goes back to the Advisor; the next one, approved, runs to the end', async () => {
  const p = await page();
  await signIn(p, FAB_OPERATOR, '#/approvals', FAB);
  await p.waitForSelector('#approvals-stream.ok');
  const run = await startFab(FAB);
  const first = 'section.approval:has(h2 code.tool-name:text-is("replace_part"))';
  await p.waitForSelector(first);
  assert.match(await p.textContent(first), /advisor-agent/);
  assert.ok(await p.$(`${first} a[href="#/runs/${run}"]`), 'the plan links its run');
  await p.click(`${first} button[data-action="reject"]`);
  await p.fill(`${first} textarea`, 'no downtime this shift; trim the setpoint instead');
  await p.click(`${first} button[data-action="confirm-reject"]`);
  // The run is told to look again: the Advisor proposes another plan, which appears live.
  const second = 'section.approval:has(h2 code.tool-name:text-is("set_temperature"))';
  await p.waitForSelector(second);
  await p.waitForSelector(first, { state: 'detached' });
  await shoot(p, 'fab-approvals');
  await p.click(`${second} button[data-action="approve"]`);
  await p.click(`${second} button[data-action="confirm-approve"]`);
  await p.click('#watch-run');
  await p.waitForSelector('#run-timeline li[data-event="finished"]');
  await p.waitForFunction(() => document.querySelector('#run-head') && /done|완료/.test(document.querySelector('#run-head').textContent));
  await p.waitForFunction(() => /"executed"/.test((document.querySelector('#run-outcome') || {}).textContent || ''));
  const outcome = await p.textContent('#run-outcome');
  assert.match(outcome, /"executed"/);
  assert.match(outcome, /no downtime this shift/);
  await shoot(p, 'fab-run-done');
  const done = await api('GET', `/v1/runs/${run}`, FAB_OPERATOR, undefined, FAB);
  assert.equal(done.body.state.outcome.status, 'executed', JSON.stringify(done.body.state.outcome));
  // The run's decision records: searchable, each opening on its harness_checks.
  await p.goto(`${FAB}/#/decisions`);
  await p.waitForSelector('#tabpanel table');
  await p.fill('#search', 'advisor');
  const rows = await p.$$('#tabpanel tbody tr');
  assert.ok(rows.length >= 2, `${rows.length} advisor records`);
  assert.doesNotMatch(await p.textContent('#tabpanel tbody'), /diagnostician/);
  await p.click('#tabpanel tbody tr >> nth=0 >> button');
  await p.waitForSelector('#record-detail h3 code:text-is("harness_checks")');
  assert.match(await p.textContent('#record-detail'), /schema_valid/);
  await p.waitForSelector('#chain-status .badge.ok');
  await shoot(p, 'fab-decisions');
  // The same records through the drift detector: one section per series, each with its chart.
  await p.goto(`${FAB}/#/drift`);
  await p.waitForSelector('.drift-series svg.chart');
  assert.match(await p.textContent('#drift-body'), /confidence · advisor/);
  await shoot(p, 'fab-drift');
  await p.context().close();
});

test('a run waiting for a human: choose a cause, then approve the plan, in the run view', async () => {
  const p = await page(390);
  await signIn(p, FAB_OPERATOR, '#/runs', FAB_CHOICE);
  const run = await startFab(FAB_CHOICE);
  await p.goto(`${FAB_CHOICE}/#/runs/${run}`);
  const choose = '.interrupt[data-kind="choose_candidate"]';
  await p.waitForSelector(choose);
  assert.match(await p.textContent(choose), /vacuum pump wear/);
  await shoot(p, 'run-choose');
  await p.check(`${choose} input[type="radio"] >> nth=1`);
  await p.click(`${choose} button[data-action="choose"]`);
  const plan = '.interrupt[data-kind="approve_plan"]';
  await p.waitForSelector(plan);
  assert.match(await p.textContent(plan), /replace_part/);
  assert.match(await p.textContent(plan), /gas_valve/);
  // A destructive plan: Confirm stays disabled until the tool's name is typed.
  await p.click(`${plan} button[data-action="approve"]`);
  const confirm = `${plan} button[data-action="confirm-approve"]`;
  assert.ok(await p.$eval(confirm, (b) => b.disabled), 'confirm enabled before the name was typed');
  await p.fill(`${plan} input[data-action="confirm-name"]`, 'replace_par');
  assert.ok(await p.$eval(confirm, (b) => b.disabled));
  await p.fill(`${plan} input[data-action="confirm-name"]`, 'replace_part');
  await shoot(p, 'run-confirm-destructive');
  await p.click(confirm);
  await p.waitForFunction(() => /done|완료/.test(document.querySelector('#run-head').textContent));
  const done = await api('GET', `/v1/runs/${run}`, FAB_OPERATOR, undefined, FAB_CHOICE);
  assert.equal(done.body.state.outcome.status, 'executed', JSON.stringify(done.body.state));
  assert.equal(done.body.state.diagnosis.chosen_by, 'operator');
  assert.equal(done.body.state.diagnosis.cause, 'stuck gas valve');
  await p.context().close();
});

test('workbench tabs 2 to 4 assemble their prompt and judge a sample answer', async () => {
  const p = await page();
  await signIn(p, OPERATOR, '#/workbench/loop');
  for (const [tab, expected, text] of [['loop', 'pass', /98\.0665/], ['plan', 'pass', /Deliver materials/], ['injection', 'reported', /report/]]) {
    await p.goto(`${BASE}/#/workbench/${tab}`);
    await p.click('#wb-sample');
    await p.click('#wb-make-prompt');
    await p.waitForSelector('#wb-prompt');
    assert.ok((await p.inputValue('#wb-prompt')).length > 100, `${tab}: a prompt`);
    await p.click('#wb-run');
    await p.waitForSelector('#wb-report .badge');
    assert.equal((await p.textContent('#wb-report .badge')).trim(), expected, `${tab}: ${await p.textContent('#wb-report')}`);
    assert.match(await p.textContent('#wb-report'), text);
    if (tab === 'loop') assert.ok(await p.$('math'), 'the loop tab shows its formula in MathML');
    await shoot(p, `workbench-${tab}`);
  }
  await p.context().close();
});

test('workbench tab 1 checks a sample answer; the state link restores the inputs', async () => {
  const p = await page();
  await signIn(p, OPERATOR, '#/workbench/tools');
  await p.click('#wb-sample');
  assert.match(await p.inputValue('#wb-prompt'), /convert_unit/);
  await p.click('#wb-run');
  await p.waitForSelector('#wb-report tr.wb-call');
  const report = await p.textContent('#wb-report');
  assert.match(report, /convert_unit/);
  assert.match(report, /245\.16/);
  await shoot(p, 'workbench-tools');
  await p.click('#wb-link');
  const link = await p.inputValue('#wb-link-out');
  assert.match(link, /#\/workbench\/tools\?s=/);
  await p.goto('about:blank');
  await p.goto(link);
  await p.waitForSelector('#wb-answer');
  assert.match(await p.inputValue('#wb-answer'), /kgf/);
  await p.context().close();
});

test('runs, decisions with the audit chain, and drift render', async () => {
  // The bundled configuration's session model is scripted with no replies: the run fails, which
  // the timeline shows with the node's error.
  const started = await api('POST', '/v1/runs', REQUESTER, { pipeline: 'analysis', input: { entity: 'acme', data: { signals: ['latency'] } } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const p = await page();
  await signIn(p, OPERATOR, '#/runs');
  await p.waitForSelector(`#run-list a[href="#/runs/${started.body.run_id}"]`);
  await shoot(p, 'runs');
  await p.click(`#run-list a[href="#/runs/${started.body.run_id}"]`);
  await p.waitForSelector('#run-timeline li[data-event="finished"]');
  await p.waitForSelector('#run-head .badge.bad');
  assert.match(await p.textContent('#run-head'), /llm_unavailable/);
  await shoot(p, 'run-detail');
  await p.goto(`${BASE}/#/decisions/audit`);
  await p.waitForSelector('#chain-status .badge.ok');
  await p.waitForSelector('#tabpanel table');
  assert.match(await p.textContent('#tabpanel'), /approval requested/);
  // A call that waited for approval reads so, as a warning, not as a red `rejected`.
  const waiting = '#tabpanel tbody .badge:text-is("waiting for approval")';
  await p.waitForSelector(waiting);
  assert.match(await p.getAttribute(waiting, 'class'), /warn/);
  await p.fill('#search', 'rejected');
  assert.doesNotMatch(await p.textContent('#tabpanel tbody'), /approval requested/);
  await shoot(p, 'audit');
  await p.goto(`${BASE}/#/drift`);
  await p.waitForSelector('#drift-body p');
  assert.ok(await p.$('math'), 'the CUSUM formula is MathML');
  await shoot(p, 'drift');
  await p.context().close();
});

test('the kill switch: stop my tenant with a reason and a confirmation; calls are refused until it is lifted', async () => {
  const snapshot = { tool: 'get_service_snapshot', arguments: { service: 'checkout' } };
  const pending = await requestScale(5);
  const p = await page();
  try {
    await signIn(p, OPERATOR, '#/kill');
    await p.waitForSelector('#kill-none');
    // No reason: refused before anything is sent, and no confirmation is offered.
    await p.click('#kill-form button[data-action="stop"]');
    await p.waitForSelector('#kill-confirm .error-box');
    assert.equal(await p.$('button[data-action="confirm-stop"]'), null);
    await p.fill('#kill-reason', 'runaway agent during inc-77');
    await p.click('#kill-form button[data-action="stop"]');
    assert.match(await p.textContent('#kill-confirm'), /every agent in tenant-a/);
    await p.click('button[data-action="confirm-stop"]');
    await p.waitForSelector('#kill-result');
    await p.waitForSelector('#kill-active tr.kill-switch[data-tenant="tenant-a"]');
    const listed = await p.textContent('#kill-active');
    assert.match(listed, /runaway agent during inc-77/);
    assert.match(listed, /operator-2/);
    // The answer's unfinished work: the pending approval is listed and linked.
    await p.waitForSelector(`#kill-unfinished a[href="#/approvals/${pending}"]`);
    assert.match(await p.textContent('#kill-unfinished'), /Paused runs/);
    const refused = await api('POST', '/v1/calls', REQUESTER, snapshot);
    assert.equal(refused.status, 200);
    assert.equal(refused.body.rejection && refused.body.rejection.code, 'killed', JSON.stringify(refused.body));
    await shoot(p, 'kill-on');
    // One agent too: its own row, beside the tenant's.
    await p.check('#kill-scope-agent');
    await p.fill('#kill-agent', 'helper-bot');
    await p.fill('#kill-reason', 'looping on retries');
    await p.click('#kill-form button[data-action="stop"]');
    assert.match(await p.textContent('#kill-confirm'), /agent helper-bot in tenant-a/);
    await p.click('button[data-action="confirm-stop"]');
    await p.waitForSelector('#kill-active tr.kill-switch[data-agent="helper-bot"]');
    // Lifting needs a reason too.
    for (const row of ['tr.kill-switch[data-agent="helper-bot"]', 'tr.kill-switch[data-agent=""]']) {
      await p.click(`#kill-active ${row} button[data-action="lift"]`);
      await p.click('button[data-action="confirm-lift"]');
      await p.waitForSelector('#kill-feedback .error-box');
      await p.fill('#kill-lift-reason', 'fixed and verified');
      await p.click('button[data-action="confirm-lift"]');
      await p.waitForSelector(`#kill-active ${row}`, { state: 'detached' });
    }
    await p.waitForSelector('#kill-none');
    const allowed = await api('POST', '/v1/calls', REQUESTER, snapshot);
    assert.equal(allowed.body.status, 'ok', JSON.stringify(allowed.body));
    const switches = await api('GET', '/v1/kill', OPERATOR);
    assert.deepEqual(switches.body.switches, []);
  } finally {
    for (const body of [{ reason: 'test cleanup' }, { reason: 'test cleanup', agent: 'helper-bot' }]) await api('POST', '/v1/kill/lift', OPERATOR, body);
    await p.context().close();
  }
  // A token without the kill scopes is told so, and shown no button.
  const q = await page(390);
  await signIn(q, REQUESTER, '#/kill');
  await q.waitForSelector('#kill-no-scope');
  assert.equal(await q.$('#kill-form'), null);
  await q.context().close();
});

test('a replay report and an A/B report open in the Drift view, read in the browser only', async () => {
  assert.ok(REPLAY_REPORT && REPLAY_AB_REPORT, 'run.sh writes the replay reports');
  const one = JSON.parse(readFileSync(REPLAY_REPORT, 'utf8'));
  const ab = JSON.parse(readFileSync(REPLAY_AB_REPORT, 'utf8'));
  const p = await page();
  await signIn(p, OPERATOR, '#/drift');
  await p.waitForSelector('#drift-body p');
  const sent = [];
  p.on('request', (r) => { if (r.method() !== 'GET') sent.push(`${r.method()} ${r.url()}`); });
  await p.setInputFiles('#replay-file', REPLAY_REPORT);
  await p.waitForSelector('#replay-view svg.chart.bars');
  const totals = await p.textContent('#replay-totals');
  assert.match(totals, new RegExp(`${one.agree} of ${one.total} decisions agree`));
  assert.equal(await p.$$eval('#replay-view svg rect.bar', (r) => r.length), one.agents.length);
  for (const a of one.agents) assert.ok(await p.$(`#replay-view rect.bar[data-agent="${a.agent}"]`), a.agent);
  const disagreeing = one.items.filter((i) => !(i.comparison && i.comparison.agree)).length;
  assert.ok(disagreeing > 0);
  assert.equal(await p.$$eval('#replay-view .replay-disagreements tbody tr', (r) => r.length), disagreeing);
  await shoot(p, 'replay');
  await p.setInputFiles('#replay-file', REPLAY_AB_REPORT);
  await p.waitForSelector('#replay-view .replay-side[data-side="B"]');
  assert.match(await p.textContent('#replay-totals'), new RegExp(`agree with each other on ${ab.a_b_agree}`));
  assert.equal(await p.$$eval('#replay-view svg rect.bar-0', (r) => r.length), ab.a.agents.length);
  assert.equal(await p.$$eval('#replay-view svg rect.bar-1', (r) => r.length), ab.b.agents.length);
  assert.match(await p.textContent('#replay-view .replay-side[data-side="B"]'), /etch_delta_rejected/);
  await shoot(p, 'replay-ab');
  // Anything else is refused with a message.
  await p.setInputFiles('#replay-file', { name: 'x.json', mimeType: 'application/json', buffer: Buffer.from('{"hello": 1}') });
  await p.waitForSelector('#replay-view .error-box');
  assert.deepEqual(sent, [], 'nothing was uploaded');
  await p.context().close();
});

test('a decision record is rated 1–5 with a comment, and the stored feedback is shown', async () => {
  const p = await page(390);
  await signIn(p, FAB_OPERATOR, '#/decisions', FAB);
  await p.waitForSelector('#tabpanel table');
  await p.click('#tabpanel tbody tr >> nth=0 >> button');
  await p.waitForSelector('#feedback-form');
  await p.waitForSelector('#feedback-list p');
  await p.click('#feedback-form button[data-action="rate"]');
  await p.waitForSelector('#feedback-form .error-box');
  await p.check('#rating-4');
  await p.fill('#feedback-comment', 'right cause, cautious plan');
  await p.click('#feedback-form button[data-action="rate"]');
  await p.waitForSelector('#feedback-result');
  await p.waitForSelector('#feedback-list tr.feedback-row');
  const shown = await p.textContent('#feedback-list');
  assert.match(shown, /4\/5/);
  assert.match(shown, /right cause, cautious plan/);
  assert.match(shown, /operator-kim/);
  const id = (await p.textContent('#record-title .hash')).trim();
  const stored = await api('GET', `/v1/feedback?decision_id=${encodeURIComponent(id)}`, FAB_OPERATOR, undefined, FAB);
  assert.equal(stored.body.feedback.length, 1, JSON.stringify(stored.body));
  assert.equal(stored.body.feedback[0].rating, 4);
  await shoot(p, 'decision-feedback');
  await p.context().close();
});

test('the language switch changes every label; theme and font size persist', async () => {
  const p = await page();
  await signIn(p);
  await p.selectOption('#lang', 'ko');
  await p.waitForFunction(() => document.documentElement.lang === 'ko');
  assert.match(await p.textContent('#nav'), /승인/);
  assert.match(await p.textContent('h1'), /대기 중인 승인/);
  await p.click('#theme');
  assert.equal(await p.getAttribute('html', 'data-theme'), 'dark');
  await p.click('#font-up');
  await p.reload();
  await p.waitForSelector('#whoami');
  assert.equal(await p.getAttribute('html', 'data-theme'), 'dark');
  assert.equal(await p.evaluate(() => document.documentElement.style.fontSize), '110%');
  await shoot(p, 'approvals-ko-dark');
  await p.goto(`${BASE}/#/workbench/tools`);
  await p.waitForSelector('#wb-task');
  await shoot(p, 'workbench-ko-dark');
  await p.selectOption('#lang', 'en');
  await p.context().close();
});
