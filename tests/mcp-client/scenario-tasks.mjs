// The official MCP TypeScript SDK v1 client (@modelcontextprotocol/sdk,
// pinned in package.json) on the legacy lane (2025-11-25): lists the
// tools, then calls `devices__list` as a task (the experimental tasks of
// 2025-11-25, `client.experimental.tasks.callToolStream` with `task`) —
// the Rust test's backend holds every call for approval and the test
// decides it with `Host::decide_approval` once the task exists — and
// prints ONE JSON line on stdout: what the client saw (every message of
// the stream, consecutive equal statuses once). The Rust test
// (surface-host/tests/mcp_tasks.rs) asserts the exact values.
//
//   node scenario-tasks.mjs <mcp-url> <token>

import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error('usage: node scenario-tasks.mjs <mcp-url> <token>');
  process.exit(2);
}
const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
).version;

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'tasks-v1', version: '1.0.0' });
await client.connect(transport);
const out = {
  sdkVersion,
  protocolVersion: transport.protocolVersion ?? null,
  tasksCapability: client.getServerCapabilities()?.tasks ?? null,
};
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.messages = [];
const stream = client.experimental.tasks.callToolStream(
  { name: 'devices__list', arguments: {} },
  undefined,
  { task: { ttl: 60000 }, timeout: 120000 },
);
for await (const m of stream) {
  let seen;
  if (m.type === 'taskCreated') seen = { type: m.type, taskId: m.task.taskId, status: m.task.status };
  else if (m.type === 'taskStatus') seen = { type: m.type, taskId: m.task.taskId, status: m.task.status };
  else if (m.type === 'result') seen = { type: m.type, result: m.result };
  else seen = { type: m.type, error: String(m.error?.message ?? m.error) };
  const last = out.messages[out.messages.length - 1];
  if (JSON.stringify(last) !== JSON.stringify(seen)) out.messages.push(seen);
}
await client.close();
console.log(JSON.stringify(out));
