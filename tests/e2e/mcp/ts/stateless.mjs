// End-to-end: the official MCP TypeScript SDK v2 client, pinned to the stateless 2026-07-28
// revision (no `initialize`, no session: `server/discover`, then self-contained requests), as a
// real client of Bridle over Streamable HTTP (`/mcp` with a bearer token) and over stdio
// (`bridle mcp --stdio`). Each transport: the negotiated era, tools with annotations and output
// schemas, a read, a change that needs approval (a tool result carrying the plan, not an
// `input_required` round trip), the grant through the CLI (`bridle approvals approve`), the
// plain identical retry executes once, and a second retry needs a new approval.
//
// Usage: node stateless.mjs PATH_TO_BRIDLE_BINARY
// Prints one line per check and a closing `e2e: N passed, N failed` line; exits non-zero on failure.

import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const SCALE = { service: 'checkout', replicas: 3, resource_version: 7 };
const PRINCIPALS = {
  'requester-1': 'service:read,service:scale',
  'viewer-4': 'service:read',
  'operator-2': 'approval:grant',
};

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    passed += 1;
    console.log(`  ok    ${name}`);
  } else {
    failed += 1;
    console.log(`  FAIL  ${name}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`);
  }
  return ok;
}

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node stateless.mjs PATH_TO_BRIDLE_BINARY');
  process.exit(2);
}
const tmp = mkdtempSync(join(tmpdir(), 'bridle-e2e-ts-'));
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BRIDLE_')));
env.BRIDLE_JWT_SECRET = randomBytes(32).toString('hex');
env.RUST_LOG ??= 'warn';
const db = `sqlite://${join(tmp, 'bridle.db')}`;

function bridle(args) {
  return execFileSync(binary, args, { env, encoding: 'utf8', cwd: tmp }).trim();
}

const tokens = Object.fromEntries(
  Object.entries(PRINCIPALS).map(([subject, scopes]) => [
    subject,
    bridle(['token', 'issue', '--subject', subject, '--tenant', 'tenant-a', '--services', 'checkout', '--scopes', scopes, '--ttl', '1h']),
  ]),
);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitHealthy(base, child) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`bridle serve exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('bridle serve did not become healthy in 60 s');
}

async function executedScales(base) {
  const response = await fetch(`${base}/v1/audit`, { headers: { Authorization: `Bearer ${tokens['operator-2']}` } });
  const { events = [] } = await response.json();
  return events.filter((e) => e.kind === 'tool_call' && e.tool === 'scale_replicas' && e.decision === 'executed').length;
}

function modernClient() {
  return new Client({ name: 'bridle-e2e-ts', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
}

async function scenario(label, client, base) {
  check(`${label}: stateless era negotiated`, client.getNegotiatedProtocolVersion() === '2026-07-28' && client.getProtocolEra() === 'modern',
    `${client.getNegotiatedProtocolVersion()} ${client.getProtocolEra()}`);
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(`${label}: requester sees its tools`, JSON.stringify(names) === JSON.stringify(['get_service_snapshot', 'scale_replicas']), names);
  const scale = tools.find((t) => t.name === 'scale_replicas');
  const snapshot = tools.find((t) => t.name === 'get_service_snapshot');
  check(`${label}: annotations from the contract`,
    snapshot?.annotations?.readOnlyHint === true && scale?.annotations?.readOnlyHint === false
      && scale?.annotations?.destructiveHint === false && scale?.title === 'Scale replicas', { scale, snapshot });

  const read = await client.callTool({ name: 'get_service_snapshot', arguments: { service: 'checkout' } });
  check(`${label}: read tool runs`, !read.isError && read.structuredContent?.status === 'ok', read);

  const before = await executedScales(base);
  const first = await client.callTool({ name: 'scale_replicas', arguments: SCALE });
  const body = first.structuredContent ?? {};
  check(`${label}: change needs approval (a tool result, not input_required)`,
    first.isError === true && body.code === 'approval_required' && first.resultType !== 'input_required', first);
  const id = body.approval_id ?? '';
  check(`${label}: approval id, console url and the plan`,
    id !== '' && String(body.approval_url).endsWith(`/approvals/${id}`) && body.plan?.tool === 'scale_replicas'
      && JSON.stringify(body.plan?.arguments) === JSON.stringify(SCALE) && String(body.plan?.run_id).startsWith(label === 'http' ? 'mcp-' : ''),
    body);

  let granted = '';
  try {
    granted = bridle(['approvals', 'approve', id, '--db', db, '--token', tokens['operator-2']]);
    check(`${label}: operator grants through the CLI`, true);
  } catch (e) {
    check(`${label}: operator grants through the CLI`, false, `${e.stderr ?? e} ${granted}`);
  }

  const done = await client.callTool({ name: 'scale_replicas', arguments: SCALE });
  check(`${label}: the plain identical retry executes`,
    !done.isError && done.structuredContent?.status === 'ok' && done.structuredContent?.approval_id === id, done);
  const again = await client.callTool({ name: 'scale_replicas', arguments: SCALE });
  check(`${label}: approval spent, a second retry needs a new one`,
    again.isError === true && again.structuredContent?.code === 'approval_required' && again.structuredContent?.approval_id !== id, again);
  const after = await executedScales(base);
  check(`${label}: audit shows exactly one execution`, after === before + 1, `${before} -> ${after}`);
}

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = spawn(binary, ['serve', '--db', db, '--listen', `127.0.0.1:${port}`], { env, cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'] });
let serveLog = '';
server.stdout.on('data', (d) => { serveLog += d; });
server.stderr.on('data', (d) => { serveLog += d; });
const started = Date.now();
try {
  await waitHealthy(base, server);

  console.log('MCP 2026-07-28 over Streamable HTTP (TypeScript SDK v2)');
  const http = modernClient();
  await http.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${tokens['requester-1']}` } },
  }));
  await scenario('http', http, base);
  const viewer = modernClient();
  await viewer.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${tokens['viewer-4']}` } },
  }));
  const seen = (await viewer.listTools()).tools.map((t) => t.name);
  check('http: the principal comes from each request\'s token', JSON.stringify(seen) === '["get_service_snapshot"]', seen);
  const noToken = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28' }, body: '{}' });
  check('http: no token is 401', noToken.status === 401, noToken.status);
  await http.close();
  await viewer.close();

  console.log('MCP 2026-07-28 over stdio (TypeScript SDK v2)');
  const stdio = modernClient();
  await stdio.connect(new StdioClientTransport({
    command: binary,
    args: ['mcp', '--stdio', '--db', db],
    env: { ...env, BRIDLE_TOKEN: tokens['requester-1'], BRIDLE_CONSOLE_URL: base },
    stderr: 'ignore',
  }));
  await scenario('stdio', stdio, base);
  await stdio.close();

  const verify = (() => {
    try {
      bridle(['audit', 'verify', '--db', db]);
      return true;
    } catch {
      return false;
    }
  })();
  check('audit chain intact across serve and the stdio server', verify);
} catch (e) {
  check('scenario ran to the end', false, `${e?.stack ?? e}`);
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => (server.exitCode !== null ? r() : server.on('exit', r)));
  if (failed) console.log(`--- bridle serve log ---\n${serveLog.slice(-4000)}`);
  rmSync(tmp, { recursive: true, force: true });
}
console.log(`e2e mcp ts took ${((Date.now() - started) / 1000).toFixed(1)} s`);
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed || !passed ? 1 : 0);
