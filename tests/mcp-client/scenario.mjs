// Drives the agent host's MCP server with the official MCP TypeScript SDK
// client (@modelcontextprotocol/sdk, pinned in package.json) and prints ONE
// JSON line on stdout describing what the client saw. The Rust test
// (tests/mcp_interop.rs) starts the server (`examples/devices_mcp.rs`) and
// asserts the exact values; this script asserts nothing itself.
//
//   node scenario.mjs <scenario> <mcp-url> <token>
//
// Scenarios: approve, reject, unauthorized, concurrent, replicas.
// For `replicas`, <mcp-url> may be several URLs joined by commas: the
// client sends its HTTP requests to them in turn (one MCP session spread
// over several agent-host replicas, no sticky routing).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [scenario, url, token] = process.argv.slice(2);
if (!scenario || !url) {
  console.error('usage: node scenario.mjs <scenario> <mcp-url> <token>');
  process.exit(2);
}

import { readFileSync } from 'node:fs';

const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
).version;

async function connect(bearer, name = 'interop') {
  const headers = bearer === undefined ? {} : { Authorization: `Bearer ${bearer}` };
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name, version: '1.0.0' });
  const changes = { count: 0, waiters: [] };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes.count += 1;
    for (const w of changes.waiters.splice(0)) w();
  });
  await client.connect(transport);
  return { client, transport, changes };
}

/** Resolves once `changes.count` exceeds `seen` (or after `ms`). */
function changedAfter(changes, seen, ms = 10000) {
  if (changes.count > seen) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    changes.waiters.push(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** What a tool result looks like to the client. */
function summarize(result) {
  const out = { isError: result.isError ?? false, text: result.content.map((c) => c.text) };
  if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
  return out;
}

/** A call whose thrown error is reported instead of ending the script. */
async function call(client, name, args, options) {
  try {
    return summarize(await client.callTool({ name, arguments: args }, undefined, options));
  } catch (e) {
    return { threw: String(e?.message ?? e) };
  }
}

/** `devices__disable` as a client waiting for a confirmation calls it: the
 * progress notifications it receives reset its timeout; returns the result
 * and those notifications. */
async function disableWithProgress(client) {
  const progress = [];
  const result = await call(
    client,
    'devices__disable',
    { reason: 'lost' },
    {
      onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
      resetTimeoutOnProgress: true,
      timeout: 120000,
    },
  );
  return [result, progress];
}

function statuses(listed) {
  return Object.fromEntries(listed.structuredContent.devices.map((d) => [d.id, d.status]));
}

async function approveOrReject() {
  const { client, changes } = await connect(token);
  const out = { sdkVersion, protocolVersion: client.transport?.protocolVersion ?? null };
  out.serverVersion = client.getServerVersion();
  out.serverCapabilities = client.getServerCapabilities();
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => ({
    name: t.name,
    title: t.title,
    annotations: t.annotations,
    inputSchema: t.inputSchema,
    hasOutputSchema: t.outputSchema !== undefined,
    description: t.description,
  }));
  // The locked field, sent anyway.
  out.lockedField = await call(client, 'devices__disable', { deviceIds: ['dev-locked'] });
  // An invalid call of a tool that declares an output schema: an error
  // result the client must not reject for lacking structuredContent.
  out.invalidList = await call(client, 'devices__list', { limit: 0 });
  // A selection change between calls (a view capability), then the bound call.
  const seen = changes.count;
  out.select = await call(client, 'view__devices__table__select', { deviceIds: ['dev-2'] });
  out.listChangedAfterSelect = await changedAfter(changes, seen);
  [out.disable, out.progress] = await disableWithProgress(client);
  out.afterDisable = statuses(await client.callTool({ name: 'devices__list', arguments: {} }));
  out.unknownTool = await call(client, 'no_such_tool', {});
  const relisted = await client.listTools();
  out.disableDescriptionAfter = relisted.tools.find((t) => t.name === 'devices__disable')?.description;
  await client.close();
  return out;
}

async function unauthorized() {
  const out = { sdkVersion };
  for (const [label, bearer] of [
    ['noToken', undefined],
    ['wrongToken', 'not-the-token'],
  ]) {
    try {
      const { client } = await connect(bearer);
      await client.close();
      out[label] = { connected: true };
    } catch (e) {
      out[label] = { code: e?.code ?? null, message: String(e?.message ?? e) };
    }
  }
  return out;
}

async function concurrent() {
  const [a, b] = await Promise.all([connect(token, 'first'), connect(token, 'second')]);
  const out = { sdkVersion };
  const [listA, listB] = await Promise.all([a.client.listTools(), b.client.listTools()]);
  out.sameTools =
    JSON.stringify(listA.tools.map((t) => t.name)) === JSON.stringify(listB.tools.map((t) => t.name));
  out.toolCount = listA.tools.length;
  const [callA, callB] = await Promise.all([
    call(a.client, 'devices__list', {}),
    call(b.client, 'devices__list', { status: 'disabled' }),
  ]);
  out.listA = statuses(callA);
  out.listB = statuses(callB);
  // A change made through the first client reaches the second one.
  const seenB = b.changes.count;
  out.select = await call(a.client, 'view__devices__table__select', { deviceIds: ['dev-locked'] });
  out.secondSawListChanged = await changedAfter(b.changes, seenB);
  const relisted = await b.client.listTools();
  out.secondDisableDescription = relisted.tools.find((t) => t.name === 'devices__disable')?.description;
  await Promise.all([a.client.close(), b.client.close()]);
  return out;
}

/** One client whose requests alternate between the given replicas: list,
 * then `devices__disable` (confirmed or not in the page by the test), with
 * the progress notifications it received meanwhile. */
async function replicas() {
  const urls = url.split(',');
  const served = Object.fromEntries(urls.map((u) => [u, 0]));
  let next = 0;
  const alternating = (_input, init) => {
    const target = urls[next % urls.length];
    next += 1;
    served[target] += 1;
    return fetch(target, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(urls[0]), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: alternating,
  });
  const client = new Client({ name: 'replicas', version: '1.0.0' });
  await client.connect(transport);
  const out = { sdkVersion, protocolVersion: transport.protocolVersion ?? null };
  out.session = transport.sessionId !== undefined;
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => t.name).sort();
  [out.disable, out.progress] = await disableWithProgress(client);
  const list = await call(client, 'devices__list', {});
  out.listed = list.structuredContent ? statuses(list) : list;
  await client.close();
  out.requestsPerUrl = urls.map((u) => served[u]);
  return out;
}

const scenarios = { approve: approveOrReject, reject: approveOrReject, unauthorized, concurrent, replicas };
const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}`);
  process.exit(2);
}
try {
  const out = await run();
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
} catch (e) {
  console.error(e?.stack ?? String(e));
  process.exit(1);
}
