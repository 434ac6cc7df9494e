#!/usr/bin/env node
// Records every script of the AG-UI test agent (README.md, "Recording").
//
//   node tests/agui-agent/record.mjs [--out DIR]     (default: tests/fixtures/agui)
//
// Starts server.mjs on an ephemeral port, then drives each script with the
// official @ag-ui/client HttpAgent (which sends Accept: text/event-stream),
// through a fetch that keeps the exact request body and the raw response
// bytes. Writes <script>.request.json and <script>.sse per run; "disable"
// has two runs (<script>-1 / <script>-2): the second carries the messages
// the HttpAgent itself built from the first run's events (the assistant
// message with its toolCalls) plus the page's tool message.

process.env.MASTRA_TELEMETRY_DISABLED ??= '1';
process.env.SUPPRESS_TRANSFORMATION_WARNINGS ??= 'true';

import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HttpAgent } from '@ag-ui/client';

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({ options: { out: { type: 'string', default: join(here, '..', 'fixtures', 'agui') } } });
const out = resolve(values.out);

// The tools a page declares: devices.disable under the name the page can
// declare (AG-UI frameworks keep tool names to [A-Za-z0-9_-]) with a reduced
// schema, and devices.list.
export const TOOLS = [
  {
    name: 'devices_disable',
    description: 'Disable devices (devices.disable)',
    parameters: { type: 'object', properties: { reason: { type: 'string' } } },
  },
  {
    name: 'devices_list',
    description: 'List devices (devices.list)',
    parameters: { type: 'object', properties: { status: { type: 'string', enum: ['active', 'disabled'] } } },
  },
];

// The same tools declared under their dotted procedure names, for the
// "disable-dotted" recording (Mastra rewrites the names the model sees).
export const DOTTED_TOOLS = TOOLS.map((t) => ({ ...t, name: t.name.replace('_', '.') }));

// The page's answer to the disable call of the first "disable" run.
export const DISABLE_RESULT = JSON.stringify({ disabled: ['dev-1', 'dev-2'] });

function startServer() {
  const child = spawn(process.execPath, [join(here, 'server.mjs'), '--port', '0', '--exit-on-stdin-close'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolveStart, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server exited early (${code})`)));
    createInterface({ input: child.stdout }).once('line', (line) => resolveStart({ child, port: JSON.parse(line).port }));
  });
}

/** A fetch that keeps what went over the wire. */
function recordingFetch(wire) {
  return async (url, init) => {
    wire.request = JSON.parse(init.body);
    wire.headers = init.headers;
    const res = await fetch(url, init);
    wire.status = res.status;
    wire.contentType = res.headers.get('content-type');
    wire.chunks = [];
    // Read the body ourselves so a cut connection ("drop") ends up as an
    // error of this stream (what HttpAgent sees) and nowhere else.
    const reader = res.body.getReader();
    const body = new ReadableStream({
      async pull(ctl) {
        try {
          const { done, value } = await reader.read();
          if (done) return ctl.close();
          wire.chunks.push(Buffer.from(value));
          ctl.enqueue(value);
        } catch (err) {
          wire.cut = err?.message ?? String(err);
          ctl.error(err);
        }
      },
      cancel(reason) {
        return reader.cancel(reason).catch(() => {});
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
}

async function run(agent, wire, params) {
  const events = [];
  let error;
  try {
    await agent.runAgent(params, { onEvent: ({ event }) => void events.push(event.type) });
  } catch (err) {
    error = err?.message ?? String(err);
  }
  return { events, error };
}

function save(name, wire) {
  writeFileSync(join(out, `${name}.request.json`), `${JSON.stringify(wire.request, null, 2)}\n`);
  writeFileSync(join(out, `${name}.sse`), Buffer.concat(wire.chunks ?? []));
}

function userMessage(text) {
  return { id: 'msg-user-1', role: 'user', content: text };
}

// The "drop" run: after HttpAgent has seen the body fail, Node 20's fetch
// (undici) still rejects one promise of its own with the same "terminated"
// error, which nobody can await. That one is expected; anything else is not.
process.on('unhandledRejection', (err) => {
  if (err?.message === 'terminated' && err?.cause?.code === 'UND_ERR_SOCKET') return;
  console.error('record: unhandled rejection:', err);
  process.exit(1);
});

async function main() {
  mkdirSync(out, { recursive: true });
  const { child, port } = await startServer();
  const url = `http://127.0.0.1:${port}/agent`;
  const summary = {};
  const origError = console.error;
  console.error = () => {}; // AbstractAgent logs "Agent execution failed" for error/drop; the summary says it.
  try {
    const runs = ['disable', 'parallel', 'unknown-tool', 'locked', 'error', 'drop', 'disable-dotted'];
    for (const recording of runs) {
      const script = recording === 'disable-dotted' ? 'disable' : recording;
      const wire = {};
      const agent = new HttpAgent({
        url,
        agentId: 'devices-agent',
        threadId: `thread-${recording}`,
        initialMessages: [userMessage(`${script}: please disable the lobby devices`)],
        fetch: recordingFetch(wire),
      });
      const params = { runId: `run-${recording}-1`, tools: recording === 'disable-dotted' ? DOTTED_TOOLS : TOOLS, context: [], forwardedProps: { script } };
      const first = await run(agent, wire, params);
      const name = recording === 'disable' ? 'disable-1' : recording;
      save(name, wire);
      summary[name] = first;

      if (recording === 'disable') {
        const call = agent.messages.findLast((m) => m.role === 'assistant' && m.toolCalls?.length)?.toolCalls?.[0];
        if (!call) throw new Error('disable: the first run left no assistant tool call in agent.messages');
        agent.addMessage({ id: 'msg-tool-1', role: 'tool', toolCallId: call.id, content: DISABLE_RESULT });
        const wire2 = {};
        agent.fetch = recordingFetch(wire2);
        const second = await run(agent, wire2, { ...params, runId: `run-${recording}-2` });
        save('disable-2', wire2);
        summary['disable-2'] = second;
        summary.disableMessagesAfter = agent.messages;
      }
    }
  } finally {
    console.error = origError;
    child.stdin.end();
    child.kill('SIGTERM');
  }
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

main().catch((err) => {
  console.error('record: failed:', err);
  process.exit(1);
});
