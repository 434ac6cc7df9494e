// Drives the agent host's MCP server with the official MCP TypeScript SDK
// v2 client (@modelcontextprotocol/client, pinned in package.json) on the
// current protocol revision, 2026-07-28 (`versionNegotiation` pinned: no
// `initialize`, no session; `server/discover`, per-request `_meta`,
// `subscriptions/listen`), and prints ONE JSON line on stdout describing
// what the client saw. The Rust test (tests/mcp_interop.rs) starts the
// server (`examples/devices_mcp.rs`) and asserts the exact values; this
// script asserts nothing itself.
//
//   node scenario-v2.mjs <scenario> <mcp-url> <token>
//
// Scenarios: approve, replicas (<mcp-url> may be several URLs joined by
// commas: the client sends its HTTP requests to them in turn).

import { readFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [scenario, url, token] = process.argv.slice(2);
if (!scenario || !url) {
  console.error('usage: node scenario-v2.mjs <scenario> <mcp-url> <token>');
  process.exit(2);
}

const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/client/package.json', import.meta.url), 'utf8'),
).version;

/** Every request the client sends: the MCP headers of each (2026-07-28
 * names the method and tool in headers) and whether one carried a
 * session id. */
const sent = [];
const recordingFetch = (input, init) => {
  const headers = new Headers(init?.headers);
  sent.push({
    method: headers.get('mcp-method'),
    name: headers.get('mcp-name'),
    version: headers.get('mcp-protocol-version'),
    session: headers.has('mcp-session-id'),
  });
  return fetch(input, init);
};

async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch,
  });
  const client = new Client(
    { name: 'interop-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  const changes = { count: 0, waiters: [] };
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    changes.count += 1;
    for (const w of changes.waiters.splice(0)) w();
  });
  await client.connect(transport);
  return { client, changes };
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

function summarize(result) {
  const out = { isError: result.isError ?? false, text: result.content.map((c) => c.text) };
  if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
  return out;
}

async function call(client, name, args, options) {
  try {
    return summarize(await client.callTool({ name, arguments: args }, options));
  } catch (e) {
    return { threw: String(e?.message ?? e) };
  }
}

function statuses(listed) {
  return Object.fromEntries(listed.structuredContent.devices.map((d) => [d.id, d.status]));
}

async function approve() {
  const { client, changes } = await connect();
  const out = { sdkVersion, protocolVersion: client.getNegotiatedProtocolVersion() ?? null };
  out.serverVersion = client.getServerVersion();
  out.serverCapabilities = client.getServerCapabilities();
  const subscription = await client.listen({ toolsListChanged: true });
  out.honoredFilter = subscription.honoredFilter;
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => ({
    name: t.name,
    title: t.title,
    annotations: t.annotations,
    inputSchema: t.inputSchema,
    hasOutputSchema: t.outputSchema !== undefined,
    description: t.description,
  }));
  out.lockedField = await call(client, 'devices__disable', { deviceIds: ['dev-locked'] });
  const seen = changes.count;
  out.select = await call(client, 'view__devices__table__select', { deviceIds: ['dev-2'] });
  out.listChangedAfterSelect = await changedAfter(changes, seen);
  const progress = [];
  out.disable = await call(
    client,
    'devices__disable',
    { reason: 'lost' },
    {
      onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
      resetTimeoutOnProgress: true,
      timeout: 120000,
    },
  );
  out.progress = progress;
  out.afterDisable = statuses(await client.callTool({ name: 'devices__list', arguments: {} }));
  out.unknownTool = await call(client, 'no_such_tool', {});
  await subscription.close();
  out.subscriptionClosed = await subscription.closed;
  await client.close();
  out.sessionIdSent = sent.some((s) => s.session);
  out.toolCallHeaders = sent
    .filter((s) => s.method === 'tools/call')
    .map((s) => [s.name, s.version]);
  out.methods = [...new Set(sent.map((s) => s.method))].sort();
  return out;
}

/** One client whose requests alternate between the given replicas (URLs
 * joined by commas): list, `devices__disable` with the progress received
 * meanwhile, list again. Stateless: no session to carry over. */
async function replicas() {
  const urls = url.split(',');
  const served = Object.fromEntries(urls.map((u) => [u, 0]));
  let next = 0;
  const alternating = (_input, init) => {
    const target = urls[next % urls.length];
    next += 1;
    served[target] += 1;
    return recordingFetch(target, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(urls[0]), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: alternating,
  });
  const client = new Client(
    { name: 'replicas-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(transport);
  const out = { sdkVersion, protocolVersion: client.getNegotiatedProtocolVersion() ?? null };
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => t.name).sort();
  const progress = [];
  out.disable = await call(
    client,
    'devices__disable',
    {},
    {
      onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
      resetTimeoutOnProgress: true,
      timeout: 120000,
    },
  );
  out.progress = progress;
  const list = await call(client, 'devices__list', {});
  out.listed = list.structuredContent ? statuses(list) : list;
  await client.close();
  out.sessionIdSent = sent.some((s) => s.session);
  out.requestsPerUrl = urls.map((u) => served[u]);
  return out;
}

const scenarios = { approve, replicas };
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
