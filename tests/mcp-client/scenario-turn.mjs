// A whole agent turn through the devices console's MCP endpoint, with an
// official MCP TypeScript SDK client (pinned in package.json) on one lane:
//
//   v2  @modelcontextprotocol/client, pinned to 2026-07-28
//       (`versionNegotiation: {mode: {pin: "2026-07-28"}}`), declaring the
//       tasks extension `io.modelcontextprotocol/tasks`;
//   v1  @modelcontextprotocol/sdk on the legacy lane (2025-11-25, an MCP
//       session), with the experimental tasks of 2025-11-25.
//
// The turn: `tools/list`; `devices__disable`, which waits in the page for
// the user's confirmation (its progress notifications recorded); then
// `devices__purge` as a task — it too waits for the page's confirmation,
// then the backend holds it for a person's approval and the call is
// answered with a task named by the approval; the client polls the task
// until it is `completed` and reads its result. The Rust test
// (examples/devices-host/tests/mcp_turns.rs) confirms in the page and
// decides on the approver page meanwhile, and asserts the exact values.
//
// Prints JSON lines on stdout as the turn goes (`step` names each), the
// last one the JSON-RPC messages the client sent and received (`wire`,
// the request envelopes' `_meta` left out). Asserts nothing itself.
//
//   node scenario-turn.mjs <v1|v2> <mcp-url> <token>

import { readFileSync } from 'node:fs';

const [lane, url, token] = process.argv.slice(2);
if (!['v1', 'v2'].includes(lane) || !url || !token) {
  console.error('usage: node scenario-turn.mjs <v1|v2> <mcp-url> <token>');
  process.exit(2);
}

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const WAIT = { resetTimeoutOnProgress: true, timeout: 120000 };

function say(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function version(pkg) {
  const path = `./node_modules/${pkg}/package.json`;
  return JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')).version;
}

/** What a tool result looks like to the client. */
function summarize(result) {
  const out = { isError: result.isError ?? false, text: result.content.map((c) => c.text) };
  if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
  if (result._meta !== undefined) out._meta = result._meta;
  return out;
}

/** The messages on the wire, each as sent or received, with the request
 * envelope's `_meta` reduced to its progress token (2026-07-28 repeats the
 * protocol version, client info and capabilities in every request). */
const wire = [];
const tasksSeen = [];
function observe(transport) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ sent: slim(message) });
    return send(message, options);
  };
  const receive = transport.onmessage;
  transport.onmessage = (message, extra) => {
    wire.push({ received: slim(message) });
    // 2026-07-28: the SDK has no runtime for the tasks extension; the
    // task a `tools/call` is answered with is read here.
    if (message.result?.resultType === 'task') tasksSeen.push(message.result);
    receive?.(message, extra);
  };
}

function slim(message) {
  const copy = structuredClone(message);
  const meta = copy.params?._meta;
  if (meta !== undefined && copy.id !== undefined) {
    if (meta.progressToken === undefined) delete copy.params._meta;
    else copy.params._meta = { progressToken: meta.progressToken };
  }
  return copy;
}

function progressRecorder() {
  const progress = [];
  return [progress, (p) => progress.push({ progress: p.progress, message: p.message })];
}

/** Consecutive equal task statuses once. */
function statusLine(task) {
  return { step: 'status', taskId: task.taskId, status: task.status, statusMessage: task.statusMessage };
}
let lastStatus;
function sayStatus(task) {
  const line = statusLine(task);
  if (JSON.stringify(line) !== lastStatus) say(line);
  lastStatus = JSON.stringify(line);
}

async function v2() {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client(
    { name: 'turn-v2', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    },
  );
  await client.connect(transport);
  observe(transport);
  say({
    step: 'connected',
    sdk: '@modelcontextprotocol/client',
    sdkVersion: version('@modelcontextprotocol/client'),
    protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
    tasks: client.getServerCapabilities()?.extensions?.[TASKS_EXTENSION] ?? null,
  });
  const listed = await client.listTools();
  say({ step: 'tools', names: listed.tools.map((t) => t.name).sort() });

  let [progress, onprogress] = progressRecorder();
  const disabled = await client.callTool({ name: 'devices__disable', arguments: {} }, { onprogress, ...WAIT });
  say({ step: 'disable', progress, result: summarize(disabled) });

  [progress, onprogress] = progressRecorder();
  let callToolError = null;
  try {
    await client.callTool({ name: 'devices__purge', arguments: {} }, { onprogress, ...WAIT });
  } catch (e) {
    callToolError = e?.code ?? String(e);
  }
  const created = tasksSeen[0];
  if (created === undefined) throw new Error(`devices__purge was not answered with a task (${callToolError})`);
  say({ step: 'task', progress, callToolError, task: created });

  // Polls `tasks/get` (the extension's method; a request with an explicit
  // result schema, as the SDK allows for the extension's names).
  const anyResult = { '~standard': { version: 1, vendor: 'scenario-turn', validate: (value) => ({ value }) } };
  for (;;) {
    const task = await client.request({ method: 'tasks/get', params: { taskId: created.taskId } }, anyResult);
    sayStatus(task);
    if (task.status === 'completed') {
      say({ step: 'result', result: summarize(task.result) });
      break;
    }
    if (task.status !== 'working') break;
    await new Promise((resolve) => setTimeout(resolve, task.pollIntervalMs ?? 1000));
  }
  await client.close();
}

async function v1() {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'turn-v1', version: '1.0.0' });
  await client.connect(transport);
  observe(transport);
  say({
    step: 'connected',
    sdk: '@modelcontextprotocol/sdk',
    sdkVersion: version('@modelcontextprotocol/sdk'),
    protocolVersion: transport.protocolVersion ?? null,
    tasks: client.getServerCapabilities()?.tasks ?? null,
  });
  const listed = await client.listTools();
  say({ step: 'tools', names: listed.tools.map((t) => t.name).sort() });

  let [progress, onprogress] = progressRecorder();
  const disabled = await client.callTool({ name: 'devices__disable', arguments: {} }, undefined, {
    onprogress,
    ...WAIT,
  });
  say({ step: 'disable', progress, result: summarize(disabled) });

  [progress, onprogress] = progressRecorder();
  const stream = client.experimental.tasks.callToolStream({ name: 'devices__purge', arguments: {} }, undefined, {
    task: { ttl: 60000 },
    onprogress,
    ...WAIT,
  });
  for await (const m of stream) {
    if (m.type === 'taskCreated') say({ step: 'task', progress, task: m.task });
    else if (m.type === 'taskStatus') sayStatus(m.task);
    else if (m.type === 'result') say({ step: 'result', result: summarize(m.result) });
    else say({ step: 'error', error: String(m.error?.message ?? m.error) });
  }
  await client.close();
}

try {
  await (lane === 'v2' ? v2() : v1());
  say({ step: 'wire', messages: wire });
  process.exit(0);
} catch (e) {
  console.error(e?.stack ?? String(e));
  say({ step: 'wire', messages: wire });
  process.exit(1);
}
