#!/usr/bin/env node
// The AG-UI test agent (README.md).
//
//   MASTRA_TELEMETRY_DISABLED=1 node tests/agui-agent/server.mjs --port 0 [--exit-on-stdin-close]
//
// Listens on 127.0.0.1 (port 0 = ephemeral) and prints exactly one line to
// stdout when ready: {"port":<n>}. POST /agent takes an AG-UI RunAgentInput
// (JSON) and answers the events of one run, encoded by the official
// @ag-ui/encoder EventEncoder (SSE when Accept is text/event-stream, the
// protobuf framing when Accept prefers application/vnd.ag-ui.event+proto).
// Behind it: a real @mastra/core Agent, wrapped by the official @ag-ui/mastra
// MastraAgent, whose model is ai/test's MockLanguageModelV3 following a
// script chosen by the request (scripts.mjs). No network, no API key.

process.env.MASTRA_TELEMETRY_DISABLED ??= '1';

import { realpathSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { EventType } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { MastraAgent } from '@ag-ui/mastra';
import { Agent } from '@mastra/core/agent';
import { chooseScript, scriptedModel } from './scripts.mjs';

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

// Any origin may call the agent (a page served from another port, as in
// the browser tests); no credentials.
const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'content-type, accept',
  'access-control-max-age': '600',
};

function plain(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/plain', ...CORS });
  res.end(text);
}

/** One AG-UI run: a fresh Mastra agent over a fresh scripted model. */
async function handleAgent(req, res) {
  let input;
  try {
    input = await readJson(req);
  } catch {
    return plain(res, 400, 'body must be JSON (RunAgentInput)');
  }
  if (typeof input?.threadId !== 'string' || typeof input?.runId !== 'string' || !Array.isArray(input?.messages)) {
    return plain(res, 400, 'RunAgentInput needs threadId, runId and messages');
  }
  input = { tools: [], context: [], state: {}, forwardedProps: {}, ...input };
  const script = chooseScript(input);

  const mastra = new Agent({
    id: 'devices-agent',
    name: 'devices-agent',
    instructions: 'You manage devices through the tools the page declares.',
    model: scriptedModel(script),
  });
  const agent = new MastraAgent({ agentId: 'devices-agent', agent: mastra, resourceId: 'agui-agent-tests' });

  const encoder = new EventEncoder({ accept: req.headers.accept });
  res.writeHead(200, {
    'content-type': encoder.getContentType(),
    ...CORS,
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });

  let cut = false;
  const write = (event) => {
    if (cut || res.destroyed) return;
    const bytes = encoder.encodeBinary(event);
    if (script.name === 'drop' && event.type === EventType.TOOL_CALL_ARGS) {
      // The "drop" script: the connection dies mid-tool-call, after
      // TOOL_CALL_ARGS and before TOOL_CALL_END, with no terminating chunk.
      cut = true;
      res.write(bytes, () => res.socket?.destroy());
      return;
    }
    res.write(bytes);
  };

  await new Promise((resolve) => {
    const sub = agent.run(input).subscribe({
      next: write,
      error: (err) => {
        // MastraAgent.run errors its Observable; the run still ends on the
        // wire with RUN_ERROR inside a 200 stream (AG-UI has no HTTP error
        // once the stream has started).
        write({ type: EventType.RUN_ERROR, message: err?.message ?? String(err), code: 'AGENT_ERROR' });
        resolve();
      },
      complete: resolve,
    });
    res.on('close', () => {
      sub.unsubscribe();
      resolve();
    });
  });
  if (!cut && !res.destroyed) res.end();
}

export async function startAgent({ port = 0, host = '127.0.0.1' } = {}) {
  const server = createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (req.method === 'OPTIONS' && path === '/agent') {
      res.writeHead(204, CORS);
      res.end();
      return;
    }
    if (req.method === 'POST' && path === '/agent') {
      handleAgent(req, res).catch((err) => {
        console.error('agui-agent: request failed:', err);
        if (!res.headersSent) plain(res, 500, 'Internal server error');
        else res.destroy();
      });
      return;
    }
    plain(res, 404, 'Not found');
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    server,
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
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`agui-agent: --port must be an integer 0..65535, got ${JSON.stringify(values.port)}`);
    process.exit(2);
  }
  const agent = await startAgent({ port, host: values.host });
  const stop = () => {
    agent.close().then(() => process.exit(0));
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
  process.stdout.write(`${JSON.stringify({ port: agent.port })}\n`);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error('agui-agent: failed to start:', err);
    process.exit(1);
  });
}
