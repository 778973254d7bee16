// A pass-through HTTP proxy that adds `Authorization: Bearer TOKEN` to every request, for the MCP
// conformance suite, which has no option to send a bearer token. Everything else (method, path,
// headers including Host, body, streamed responses) passes unchanged, so the suite still tests
// Bridle's own answers (its Host checks included).
//
// Usage: node auth-proxy.mjs LISTEN_PORT UPSTREAM_PORT TOKEN

import { createServer, request } from 'node:http';

const [listenPort, upstreamPort, token] = process.argv.slice(2);
if (!token) {
  console.error('usage: node auth-proxy.mjs LISTEN_PORT UPSTREAM_PORT TOKEN');
  process.exit(2);
}

createServer((req, res) => {
  const upstream = request(
    {
      host: '127.0.0.1',
      port: Number(upstreamPort),
      method: req.method,
      path: req.url,
      headers: { ...req.headers, authorization: `Bearer ${token}` },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`proxy: ${e.message}`);
  });
  res.on('close', () => upstream.destroy());
  req.pipe(upstream);
}).listen(Number(listenPort), '127.0.0.1', () => console.log(`auth proxy on ${listenPort} -> ${upstreamPort}`));
