// Browser tests of run history (issue 26 point 4): a paused run and a finished run's kept
// timeline and graph, the runs list's columns at 390 px (stacked cards, Status visible), both
// languages, and a run id only the gate knows opening as its calls. Screenshots:
// run-history-*-{390,1280}.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { api, page, signIn, shoot, requestScale, OPERATOR, SCALE_RUN, FAB_CHOICE, FAB_AGENT, FAB_OPERATOR } from './support.mjs';

async function startFab(base) {
  const body = { pipeline: 'fab', input: { anomaly: { equipment: 'etch-02', metric: 'chamber_temp_c', value: 391 }, incident: 'inc-history' } };
  const r = await api('POST', '/v1/runs', FAB_AGENT, body, base);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.run_id;
}

test('a paused run shows its history and graph; once answered and finished, who answered and every node done', async () => {
  const p = await page();
  await signIn(p, FAB_OPERATOR, '#/runs', FAB_CHOICE);
  const run = await startFab(FAB_CHOICE);
  await p.goto(`${FAB_CHOICE}/#/runs/${run}`);
  const choose = '.interrupt[data-kind="choose_candidate"]';
  await p.waitForSelector(choose);
  assert.match(await p.textContent('#run-status-badge'), /waiting for a human/);
  assert.doesNotMatch(await p.textContent('#run-head'), /finished/);
  assert.equal(await p.$$eval(`${choose} input[type="radio"]:checked`, (l) => l.length), 0, 'no candidate preselected');
  await p.waitForSelector('#run-graph g[data-state="paused"]');
  await p.waitForSelector('#run-timeline li[data-event="started"]');
  assert.match(await p.textContent('#run-head'), /Started by/);
  await shoot(p, 'run-history-paused');
  // Choosing with nothing picked asks for a pick; nothing is sent.
  await p.click(`${choose} button[data-action="choose"]`);
  await p.waitForSelector('.error-box');
  await p.check(`${choose} input[type="radio"] >> nth=1`);
  await p.click(`${choose} button[data-action="choose"]`);
  const plan = '.interrupt[data-kind="approve_plan"]';
  await p.waitForSelector(plan);
  await p.click(`${plan} button[data-action="approve"]`);
  await p.fill(`${plan} input[data-action="confirm-name"]`, 'replace_part');
  await p.click(`${plan} button[data-action="confirm-approve"]`);
  await p.waitForFunction(() => /done/.test(document.querySelector('#run-head').textContent));
  await p.waitForSelector('#run-timeline li[data-event="answered"]');
  assert.match(await p.textContent('#run-timeline'), /answered by/);
  await p.waitForSelector('#run-timeline li[data-event="node_exit"]');
  assert.equal(await p.$$eval('#run-graph g[data-state="paused"]', (l) => l.length), 0);
  assert.ok((await p.$$('#run-graph g[data-state="done"]')).length >= 2);
  assert.doesNotMatch(await p.textContent('#run-outcome'), /_requester|_visits/);
  const shown = await api('GET', `/v1/runs/${run}`, FAB_OPERATOR, undefined, FAB_CHOICE);
  assert.ok(shown.body.events.some((e) => e.event === 'answered' && e.by), JSON.stringify(shown.body.events));
  assert.ok(shown.body.started_at && shown.body.starter && typeof shown.body.duration_ms === 'number');
  await shoot(p, 'run-history-finished');
  // Korean.
  await p.evaluate(() => localStorage.setItem('bridle.lang', 'ko'));
  await p.reload();
  await p.waitForSelector('#run-graph');
  assert.match(await p.textContent('#run-head'), /시작한 사람/);
  await shoot(p, 'run-history-ko');
  await p.context().close();
});

test('the runs list at 390 px: stacked cards keep Status, start, starter and duration', async () => {
  const p = await page(390);
  await signIn(p, FAB_OPERATOR, '#/runs', FAB_CHOICE);
  await startFab(FAB_CHOICE);
  await p.goto(`${FAB_CHOICE}/#/runs`);
  await p.waitForSelector('#run-list tbody tr');
  const status = p.locator('#run-list tbody tr').first().locator('.badge').first();
  assert.ok(await status.isVisible(), 'Status is visible');
  assert.match(await p.textContent('#run-list'), /Started by/);
  await shoot(p, 'run-history-list');
  await p.context().close();
});

test('a run id only the gate knows opens as its calls', async () => {
  await requestScale(5);
  const shown = await api('GET', `/v1/runs/${SCALE_RUN}`, OPERATOR);
  assert.equal(shown.status, 200, JSON.stringify(shown.body));
  assert.equal(shown.body.kind, 'calls');
  const p = await page();
  await signIn(p, OPERATOR, `#/runs/${SCALE_RUN}`);
  await p.waitForSelector('#run-calls li');
  assert.match(await p.textContent('#run-calls'), /scale_replicas/);
  await shoot(p, 'run-history-calls');
  await p.context().close();
});
