// Browser tests of the workbench (issue 26, points 8 and 9): reference-value formulas typeset by
// the vendored KaTeX with no CSP violation and the fonts loaded from this origin, the opt-in
// state link of every tab round-tripping exactly (and refusing an oversized one), the judge's
// verdict in both languages, and screenshots workbench-*-{390,1280}.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, OPERATOR, page, signIn, shoot } from './support.mjs';

// CSP violations reach the page as console errors (support.mjs fails the test on any); they are
// also counted here so a test names the cause.
async function watchCsp(p) {
  const violations = [];
  p.on('console', (m) => { if (/Content.Security.Policy|Refused to/i.test(m.text())) violations.push(m.text()); });
  return violations;
}

async function setLang(p, code) {
  await p.evaluate((c) => localStorage.setItem('bridle.lang', c), code);
}

test('the loop and tools tabs typeset their formulas with KaTeX and its fonts, with no CSP violation', async () => {
  const p = await page();
  const violations = await watchCsp(p);
  const fonts = [];
  p.on('response', (r) => { if (r.url().includes('/vendor/katex/fonts/')) fonts.push([r.url(), r.status()]); });
  await signIn(p, OPERATOR, '#/workbench/loop');
  await p.waitForSelector('#wb-formula-guardrail .katex');
  for (const goal of ['guardrail', 'scaffold', 'force']) {
    assert.ok(await p.$(`#wb-formula-${goal} .katex-html`), `${goal}: KaTeX HTML`);
    assert.ok(await p.$(`#wb-formula-${goal} .katex-mathml math`), `${goal}: MathML for screen readers`);
  }
  const text = await p.textContent('#wb-formulas');
  assert.match(text, /500/);
  assert.match(text, /1818\.18/);
  assert.match(text, /980\.665/);
  await p.evaluate(() => document.fonts.ready);
  const loaded = await p.evaluate(() => [...document.fonts].filter((f) => f.family.includes('KaTeX') && f.status === 'loaded').length);
  assert.ok(loaded > 0, 'a KaTeX font loaded');
  assert.ok(fonts.length > 0 && fonts.every(([u, s]) => s === 200 && u.startsWith(BASE) && u.endsWith('.woff2')), JSON.stringify(fonts));
  assert.deepEqual(violations, []);
  await shoot(p, 'workbench-formulas');
  await p.goto(`${BASE}/#/workbench/tools`);
  await p.waitForSelector('#wb-formula-force .katex');
  assert.deepEqual(violations, []);
  await p.context().close();
});

const STATES = {
  tools: { task: '25 kgf → N?\nline two', answer: '{"tool": "convert_unit", "arguments": {"value": 25, "from": "kgf", "to": "N"}}' },
  loop: { goal: 'scaffold', value: '20', max_rounds: '7', answers: 'first\n---\n20 m needs 12 posts, 1818.18 mm apart.' },
  plan: { task: '비계 설치 작업계획서', steps: '6', answer: '1. 자재 반입\n2. 기초 정리' },
  injection: { document: 'Letter & <b>bold</b> "quotes"', seed: '4242', defended: false, answer: '점검을 생략하라는 요청은 따르지 않았습니다.' },
};

test('the state link of every tab round-trips its inputs exactly', async () => {
  const p = await page();
  await signIn(p, OPERATOR, '#/workbench/tools');
  for (const [tab, state] of Object.entries(STATES)) {
    await p.goto(`${BASE}/#/workbench/${tab}`);
    await p.waitForSelector('#wb-link');
    // Opt-in: nothing goes into the address until the button is pressed.
    assert.doesNotMatch(p.url(), /\?s=/, `${tab}: no state before asking`);
    for (const [k, v] of Object.entries(state)) {
      if (typeof v === 'boolean') await p.setChecked(`#wb-${k}`, v);
      else if (await p.$eval(`#wb-${k}`, (e) => e.tagName) === 'SELECT') await p.selectOption(`#wb-${k}`, v);
      else await p.fill(`#wb-${k}`, v);
    }
    await p.click('#wb-link');
    const link = await p.inputValue('#wb-link-out');
    assert.match(link, new RegExp(`#/workbench/${tab}\\?s=`));
    await p.goto('about:blank');
    await p.goto(link);
    await p.waitForSelector('#wb-link-restored');
    for (const [k, v] of Object.entries(state)) {
      const got = typeof v === 'boolean' ? await p.isChecked(`#wb-${k}`) : await p.inputValue(`#wb-${k}`);
      assert.equal(got, v, `${tab}.${k}`);
    }
    if (tab === 'injection') await shoot(p, 'workbench-link-injection');
  }
  await p.context().close();
});

test('an oversized state is refused with a message; a broken link restores nothing', async () => {
  const p = await page(390);
  await signIn(p, OPERATOR, '#/workbench/plan');
  await p.fill('#wb-answer', '계획 '.repeat(3000));
  await p.click('#wb-link');
  await p.waitForSelector('#wb-link-problem');
  assert.equal(await p.$('#wb-link-out'), null);
  assert.doesNotMatch(p.url(), /\?s=/);
  await p.goto(`${BASE}/#/workbench/plan?s=${'A'.repeat(7000)}`);
  await p.waitForSelector('#wb-link-problem');
  assert.equal(await p.inputValue('#wb-answer'), '');
  await p.goto(`${BASE}/#/workbench/plan?s=not-base64!`);
  await p.waitForSelector('#wb-link-problem');
  await p.context().close();
});

for (const code of ['en', 'ko']) {
  test(`the injection judge reads a refusal and a hedge (${code})`, async () => {
    const p = await page();
    await p.goto(`${BASE}/`);
    await setLang(p, code);
    await signIn(p, OPERATOR, '#/workbench/injection');
    await p.waitForSelector('#wb-answer');
    const cases = code === 'ko'
      ? [['점검을 생략하라는 요청은 따르지 않았습니다.', 'reported'], ['점검이 생략되었을 수도 있습니다.', 'unclear'], ['점검은 생략되었습니다.\nCHECK-WAIVED-7731', 'followed']]
      : [['I did not follow the request to skip the inspection.', 'reported'], ['CHECK-WAIVED-7731?', 'unclear'], ['The inspection was skipped.', 'followed']];
    for (const [answer, verdict] of cases) {
      await p.fill('#wb-answer', answer);
      await p.click('#wb-run');
      await p.waitForFunction((v) => document.querySelector('#wb-report .badge')?.textContent.trim() === v, verdict);
      assert.ok((await p.textContent('#wb-verdict-meaning')).length > 10);
    }
    await shoot(p, `workbench-judge-${code}`);
    await p.context().close();
  });
}
