#!/usr/bin/env node
// The oRPC test peer (README.md).
//
//   node tests/orpc-peer/server.mjs --port 0 [--exit-on-stdin-close]
//                                   [--tls-cert PATH --tls-key PATH]
//                                   [--approval-ttl-ms N]
//
// Listens on 127.0.0.1 (port 0 = ephemeral) and prints exactly one line to
// stdout when ready: {"port":<n>}. Runs until SIGTERM / SIGINT, so it can be
// started in the background from a shell (`node server.mjs --port 4000 &`).
// With --exit-on-stdin-close it also exits when its stdin closes: the test
// harnesses pass it and keep a pipe open, so the peer ends with its parent
// even when the parent dies without a signal. State is in memory, fresh per
// process. With --tls-cert and --tls-key (PEM files, both or neither) it
// serves https (node:https) instead of http, with the same handler.
//
// /rpc/...            domain router (+ the constructs echo procedures), RPCHandler
// /capabilities/...   the interop gateway (d1 Milan, d2 Rome, d3 Turin)
// /gateway/...        the examples' gateway over the domain router's devices
// POST /approvals/decide   the application's decision endpoint (plain JSON)
// POST /__peer/revision, GET /__peer/state   test hooks (no auth)
// anything else 404 text/plain "Not found"

import { readFileSync, realpathSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { RPCHandler } from '@orpc/server/node';
import { requester } from './src/auth.mjs';
import { constructsRouter } from './src/constructs.mjs';
import { handleDecide } from './src/decide.mjs';
import { createDomainRouter } from './src/domain.mjs';
import { createGateway, DEFAULT_APPROVAL_TTL_MS, EXPOSE } from './src/gateway.mjs';
import { examplesCapabilities } from './src/governed.mjs';
import { interopCapabilities } from './src/interop.mjs';
import { readJsonBody, sendJson } from './src/http.mjs';
import { createState } from './src/state.mjs';

/**
 * Starts a peer; resolves to `{ server, port, state, interop, governed,
 * close() }`. `host` defaults to 127.0.0.1 and `port` to 0. With `tls`
 * (`{ cert, key }`, PEM) it serves https. `approvalTtlMs` is how long an
 * approval stays decidable (default 15 minutes).
 */
export async function startPeer({ port = 0, host = '127.0.0.1', tls, approvalTtlMs = DEFAULT_APPROVAL_TTL_MS } = {}) {
  const state = createState();
  const interopSet = interopCapabilities();
  const interop = createGateway({ name: 'capabilities', capabilities: interopSet.capabilities, ids: state.ids, approvalTtlMs });
  const governed = createGateway({ name: 'gateway', capabilities: examplesCapabilities(state), ids: state.ids, approvalTtlMs });
  const gateways = [interop, governed];
  const handlers = [
    [new RPCHandler({ ...createDomainRouter(state, governed), constructs: constructsRouter(requester) }), '/rpc'],
    [new RPCHandler(interop.router), '/capabilities'],
    [new RPCHandler(governed.router), '/gateway'],
  ];
  const hooks = {
    'POST /approvals/decide': (req, res) => handleDecide(req, res, gateways),
    'POST /__peer/revision': async (req, res) => {
      const body = await readJsonBody(req);
      if (typeof body?.revision !== 'string' || body.revision === '') return sendJson(res, 400, { error: 'revision must be a non-empty string' });
      for (const g of gateways) g.setRevision(body.revision);
      return sendJson(res, 200, { revision: body.revision });
    },
    'GET /__peer/state': (_req, res) =>
      sendJson(res, 200, { revision: interop.revision(), surface: EXPOSE, devices: interopSet.devices(), effects: interop.effects() }),
  };

  const handle = async (req, res) => {
    const context = {
      headers: req.headers,
      dropConnection: () => req.socket.destroy(),
    };
    try {
      const hook = hooks[`${req.method} ${req.url}`];
      if (hook) return await hook(req, res);
      for (const [handler, prefix] of handlers) {
        const { matched } = await handler.handle(req, res, { prefix, context });
        if (matched) return;
      }
      if (!res.headersSent && !res.destroyed) {
        if (req.url.startsWith('/capabilities/')) return sendJson(res, 404, { error: 'no such procedure' });
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('Not found');
      }
    } catch (err) {
      console.error('peer: request failed:', err);
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('Internal server error');
      } else {
        res.destroy();
      }
    }
  };
  const server = tls ? createHttpsServer(tls, handle) : createServer(handle);

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    server,
    state,
    interop,
    governed,
    port: server.address().port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'exit-on-stdin-close': { type: 'boolean', default: false },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'approval-ttl-ms': { type: 'string', default: String(DEFAULT_APPROVAL_TTL_MS) },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`peer: --port must be an integer 0..65535, got ${JSON.stringify(values.port)}`);
    process.exit(2);
  }
  const approvalTtlMs = Number(values['approval-ttl-ms']);
  if (!Number.isInteger(approvalTtlMs) || approvalTtlMs < 1) {
    console.error(`peer: --approval-ttl-ms must be a positive integer, got ${JSON.stringify(values['approval-ttl-ms'])}`);
    process.exit(2);
  }
  const [certPath, keyPath] = [values['tls-cert'], values['tls-key']];
  if ((certPath === undefined) !== (keyPath === undefined)) {
    console.error('peer: --tls-cert and --tls-key go together');
    process.exit(2);
  }
  const tls = certPath === undefined ? undefined : { cert: readFileSync(certPath), key: readFileSync(keyPath) };
  const peer = await startPeer({ port, host: values.host, tls, approvalTtlMs });
  const stop = () => {
    peer.close().then(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (values['exit-on-stdin-close']) {
    process.stdin.on('end', stop);
    process.stdin.on('close', stop);
    process.stdin.on('error', stop);
    process.stdin.resume();
  }
  process.stdout.write(`${JSON.stringify({ port: peer.port })}\n`);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error('peer: failed to start:', err);
    process.exit(1);
  });
}
