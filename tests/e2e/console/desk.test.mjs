// Browser tests of the approval desk's context (issue 26 points 1, 2, 7): a fab plan's card says
// why it waits (reasons, the agent and where its identity came from, the pipeline's evidence with
// every candidate, no state to compare, a live countdown with the zone), in both languages with no
// English left in the Korean card; the approval path by keyboard alone, in Korean, through the
// typed confirmation; the same change pending in two runs grouped on both cards. Screenshots:
// approval-context-*, ko-approval-context-*, ko-approval-keyboard-*, approval-same-change-*.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { api, page, signIn, shoot, OPERATOR, REQUESTER, FAB, FAB_AGENT, FAB_OPERATOR } from './support.mjs';

// A fab run on the FAB server (its Advisor's first plan is a destructive replace_part); returns
// the run id and the approval id of the plan it waits on.
async function fabPlan(incident) {
  const body = { pipeline: 'fab', input: { anomaly: { equipment: 'etch-01', metric: 'chamber_temp_c', value: 389 }, incident } };
  const started = await api('POST', '/v1/runs', FAB_AGENT, body, FAB);
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const run = started.body.run_id;
  for (let i = 0; i < 100; i += 1) {
    const r = await api('GET', `/v1/runs/${run}`, FAB_OPERATOR, undefined, FAB);
    const pause = (r.body.interrupts || []).find((x) => x.payload && x.payload.kind === 'approve_plan');
    if (pause) return { run, id: pause.payload.plan.approval_id };
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error(`run ${run} never paused on a plan`);
}

// Words of two or more Latin letters in the card's own text, leaving out what is data rather than
// wording: code, JSON, hashes, links to runs and requests, ids and names (with `_`, `-` or digits).
async function englishWords(p, selector) {
  return p.$eval(selector, (root) => {
    const skip = 'code, pre, .hash, .json, .run-link, .same-change-link, .agent-id, .tool-name, td[data-label] code';
    const words = [];
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (n.parentElement.closest(skip)) continue;
      for (const w of n.textContent.split(/[\s,;:()·—"'`/]+/)) {
        if (/^[A-Za-z]{2,}$/.test(w)) words.push(w);
      }
    }
    return words;
  });
}

test('a fab plan says why it waits: reasons, agent, evidence with every candidate, no state to compare, a live countdown with the zone', async () => {
  const p = await page(1280, { timezoneId: 'Asia/Seoul' });
  await signIn(p, FAB_OPERATOR, '#/approvals', FAB);
  const { run, id } = await fabPlan('inc-desk-context');
  const card = `section.approval[data-id="${id}"]`;
  await p.waitForSelector(card);
  const shown = (await api('GET', `/v1/approvals/${id}`, FAB_OPERATOR, undefined, FAB)).body;
  const context = shown.approval.context;
  // Why: never empty, one line per reason the API gives, each worded from its code.
  const reasons = await p.$$eval(`${card} ul.reasons li`, (l) => l.map((x) => [x.dataset.code, x.textContent]));
  assert.ok(reasons.length >= 1, 'no reasons shown');
  assert.deepEqual(reasons.map(([code]) => code), context.why.map((w) => w.code));
  assert.equal(context.why.length, context.reasons.length);
  for (const [i, w] of context.why.entries()) {
    for (const value of [w.tool, w.count, w.param].filter((v) => v !== undefined)) {
      assert.ok(reasons[i][1].includes(String(value)), `${reasons[i][1]} lacks ${value}`);
    }
  }
  // The agent and where its identity came from (the pipeline that made the call).
  assert.equal(await p.getAttribute(`${card} .agent`, 'data-source'), context.agent.source);
  assert.notEqual(context.agent.source, 'none');
  assert.equal(await p.textContent(`${card} .agent-id`), context.agent.id);
  // The pipeline's evidence: the chosen diagnosis, then every candidate with its confidence.
  const candidates = context.evidence.candidates;
  assert.ok(candidates.length >= 1, JSON.stringify(context.evidence));
  const rows = await p.$$eval(`${card} .candidates tbody tr`, (l) => l.map((r) => r.textContent));
  assert.equal(rows.length, candidates.length);
  for (const [i, c] of candidates.entries()) {
    assert.match(rows[i], new RegExp(`${c.cause}.*${Math.round(c.confidence * 100)}%`));
  }
  assert.match(await p.textContent(`${card} .diagnosis`), new RegExp(context.evidence.diagnosis.cause));
  // A destructive tool with no state to read says so, and its risk is shown.
  assert.equal(shown.compared, false);
  await p.waitForSelector(`${card} .no-state`);
  assert.match(await p.textContent(card), /risk: destructive/);
  assert.match(await p.textContent(`${card} .tool-description`), /maintenance/);
  // The run link opens the run.
  const href = await p.getAttribute(`${card} a.run-link`, 'href');
  assert.equal(href, `#/runs/${encodeURIComponent(run)}`);
  // Expiry: a countdown that moves, and the absolute time in the browser's zone (Seoul).
  const before = await p.textContent(`${card} .countdown`);
  assert.match(before, /^in (\d+ h )?\d+ min( \d+ s)?$/);
  await p.waitForFunction(([sel, was]) => document.querySelector(sel).textContent !== was, [`${card} .countdown`, before]);
  assert.match(await p.textContent(`${card} .expires-at`), /GMT\+9/);
  await shoot(p, 'approval-context');
  // Korean: the same card with every label, badge and the tool's text in Korean.
  await p.selectOption('#lang', 'ko');
  await p.waitForSelector(`${card} .countdown`);
  const ko = await p.textContent(card);
  assert.match(ko, /승인이 필요한 이유/);
  assert.match(ko, /위험: 파괴적/);
  assert.match(ko, /부품 교체/);
  assert.match(ko, /정비 상태/);
  assert.match(await p.textContent(`${card} .countdown`), /남음$/);
  assert.match(await p.textContent(`${card} .expires-at`), /GMT\+9/);
  // What the gate and the pipeline wrote (reasons, causes, the Advisor's reasoning, the pipeline's
  // name, the plan's arguments) is data and passes through as written; every other word is Korean.
  // The gate's English sentences are not data here: the card words their codes in Korean.
  const data = new Set(JSON.stringify([{ ...context, reasons: [] }, shown.approval.plan.arguments]).split(/[^A-Za-z]+/));
  const english = (await englishWords(p, card)).filter((w) => !/^(GMT|UTC|JSON)$/.test(w) && !data.has(w));
  assert.deepEqual(english, [], 'English left in the Korean card');
  const koReasons = await p.$$eval(`${card} ul.reasons li`, (l) => l.map((x) => [x.getAttribute('lang'), x.textContent]));
  for (const [attr, text] of koReasons) {
    assert.equal(attr, null, `an English reason left: ${text}`);
    assert.match(text, /[가-힣]/);
  }
  await shoot(p, 'ko-approval-context');
  // Leave nothing pending for the other tests on this server.
  const r = await api('POST', `/v1/approvals/${id}/reject`, FAB_OPERATOR, { reason: 'desk test: context only' }, FAB);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await p.context().close();
});

test('by keyboard alone, in Korean: Enter never approves; Space opens the confirmation, the typed tool name enables it, Space on Confirm grants', async () => {
  const p = await page(390);
  await p.goto(`${FAB}/`);
  await p.evaluate(() => localStorage.setItem('bridle.lang', 'ko'));
  await signIn(p, FAB_OPERATOR, '#/approvals', FAB);
  const { id } = await fabPlan('inc-desk-keyboard');
  const card = `section.approval[data-id="${id}"]`;
  // The approval link agents are given: the card comes into view with its title focused.
  await p.goto(`${FAB}/approvals/${id}`);
  await p.waitForSelector(`${card}.wanted`);
  assert.equal(await p.evaluate(() => document.activeElement.tagName), 'H2');
  // Tab to Approve (a bounded number of presses), with a visible focus ring.
  let reached = false;
  for (let i = 0; i < 80 && !reached; i += 1) {
    await p.keyboard.press('Tab');
    reached = await p.evaluate((sel) => {
      const el = document.activeElement;
      return el.matches(`${sel} button[data-action="approve"]`);
    }, card);
  }
  assert.ok(reached, 'Tab never reached Approve');
  const ring = await p.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(ring, 'none');
  assert.equal(await p.evaluate(() => document.activeElement.textContent), '승인');
  await p.keyboard.press('Enter');
  assert.equal(await p.$(`${card} [data-action="confirm-name"]`), null, 'Enter opened the confirmation');
  await p.keyboard.press('Space');
  // A destructive plan: the name must be typed; Confirm stays disabled until it is.
  await p.waitForSelector(`${card} [data-action="confirm-name"]`);
  assert.equal(await p.evaluate(() => document.activeElement.dataset.action), 'confirm-name');
  assert.match(await p.textContent(`${card} .approve-control`), /replace_part 을\(를\) 입력하세요/);
  assert.ok(await p.isDisabled(`${card} button[data-action="confirm-approve"]`));
  await p.keyboard.type('replace_par');
  assert.ok(await p.isDisabled(`${card} button[data-action="confirm-approve"]`), 'a wrong name enables Confirm');
  await p.keyboard.type('t');
  assert.ok(await p.isEnabled(`${card} button[data-action="confirm-approve"]`));
  await p.keyboard.press('Enter');
  await p.keyboard.press('Tab');
  assert.equal(await p.evaluate(() => document.activeElement.dataset.action), 'confirm-approve');
  await p.keyboard.press('Enter');
  assert.equal((await api('GET', `/v1/approvals/${id}`, FAB_OPERATOR, undefined, FAB)).body.approval.status, 'pending', 'Enter approved');
  await shoot(p, 'ko-approval-keyboard');
  await p.keyboard.press('Space');
  // What was decided and by whom, in Korean.
  await p.waitForSelector('#approval-result');
  assert.match(await p.textContent('#approval-result'), /replace_part: operator-kim 님이 승인했습니다 \(현재 (승인됨|사용됨)\)/);
  const granted = (await api('GET', `/v1/approvals/${id}`, FAB_OPERATOR, undefined, FAB)).body.approval;
  assert.ok(['granted', 'consumed'].includes(granted.status), granted.status);
  assert.equal(granted.grants[0].approver, 'operator-kim');
  await p.context().close();
});

test('the same change pending in two runs is grouped on both cards, each linking the other', async () => {
  const p = await page(390);
  await signIn(p);
  const args = { service: 'checkout', replicas: 1, resource_version: 7 };
  const ids = [];
  for (const run of ['run-desk-a', 'run-desk-b']) {
    const r = await api('POST', '/v1/calls', REQUESTER, { tool: 'scale_replicas', arguments: args, run_id: run });
    assert.equal(r.body.rejection.code, 'approval_required', JSON.stringify(r.body));
    ids.push(r.body.approval_id);
  }
  assert.notEqual(ids[0], ids[1]);
  for (const [mine, other] of [ids, [...ids].reverse()]) {
    const note = `section.approval[data-id="${mine}"] .same-change`;
    await p.waitForSelector(note);
    assert.equal(await p.getAttribute(note, 'data-n'), '1');
    assert.equal(await p.getAttribute(`${note} a`, 'href'), `#/approvals/${encodeURIComponent(other)}`);
  }
  // A different change (another replica count) is not grouped with them.
  const lone = await api('POST', '/v1/calls', REQUESTER, { tool: 'scale_replicas', arguments: { ...args, replicas: 2 }, run_id: 'run-desk-c' });
  await p.waitForSelector(`section.approval[data-id="${lone.body.approval_id}"]`);
  assert.equal(await p.$(`section.approval[data-id="${lone.body.approval_id}"] .same-change`), null);
  // At 390 px the diff is stacked: every column keeps its label, Proposed included.
  const diff = `section.approval[data-id="${ids[0]}"] .diff`;
  await p.waitForSelector(`${diff} td[data-label]`);
  const labels = await p.$$eval(`${diff} td[data-label]`, (l) => [...new Set(l.map((x) => x.dataset.label))]);
  assert.ok(labels.includes('Proposed') && labels.includes('Current'), labels.join(', '));
  await shoot(p, 'approval-same-change');
  // Following the link brings the other request into view.
  await p.click(`section.approval[data-id="${ids[0]}"] .same-change a`);
  await p.waitForSelector(`section.approval[data-id="${ids[1]}"].wanted`);
  for (const x of [...ids, lone.body.approval_id]) {
    const r = await api('POST', `/v1/approvals/${x}/reject`, OPERATOR, { reason: 'desk test: grouping only' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  await p.context().close();
});
