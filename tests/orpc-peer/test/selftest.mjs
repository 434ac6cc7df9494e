// Self-test of the oRPC peer against its README.md: starts the real
// server process (`node server.mjs --port 0`) and speaks oRPC's RPC wire
// protocol over HTTP with plain fetch (as the Rust client will), plus one
// check with the official @orpc/client RPCLink.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { createORPCClient } from '@orpc/client';
import { RPCLink } from '@orpc/client/fetch';
import { constructs } from '../src/constructs.mjs';
import { canonicalJson, contractDigest } from '../src/json.mjs';
import { pathProblems } from '../src/manifest.mjs';

const peerDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const fixturesDir = join(peerDir, '..', 'fixtures');
const USER = { authorization: 'Bearer user-token' };
const APPROVER = { authorization: 'Bearer approver-token' };

/** Spawns the peer; resolves to { child, port, firstLine }. */
async function spawnPeer({ exitOnStdinClose = true, stdin = 'pipe' } = {}) {
  const args = [join(peerDir, 'server.mjs'), '--port', '0'];
  if (exitOnStdinClose) args.push('--exit-on-stdin-close');
  const child = spawn(process.execPath, args, { stdio: [stdin, 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const firstLine = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`peer exited early with ${code}`)));
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
  });
  const { port } = JSON.parse(firstLine);
  return { child, port, firstLine, stdout: () => out };
}

function stopPeer(child) {
  if (child.exitCode === null && child.signalCode === null) child.stdin.end();
  return child.exitCode === null && child.signalCode === null ? once(child, 'exit') : Promise.resolve();
}

let peer;
let baseUrl;

/** POSTs `{"json": input}` (or `{}` when input is undefined) to `path`. */
async function call(path, input, headers = USER) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(input === undefined ? {} : { json: input }),
  });
  const text = await res.text();
  const contentType = res.headers.get('content-type');
  return { status: res.status, contentType, text, body: contentType?.includes('json') ? JSON.parse(text) : undefined };
}

/** Expects an oRPC error body. */
function assertError(res, status, code, { defined = false, message, data } = {}) {
  assert.equal(res.status, status, res.text);
  const e = res.body.json;
  assert.equal(e.code, code);
  assert.equal(e.status, status);
  assert.equal(e.defined, defined);
  if (message !== undefined) assert.equal(e.message, message);
  if (data !== undefined) assert.deepEqual(e.data, data);
  return e;
}

const descriptors = JSON.parse(readFileSync(join(fixturesDir, 'governed.descriptors.json'), 'utf8'));
const digestOf = (path) => descriptors.find((d) => d.path === path).contractDigest;

function invoke(path, invocationId, input, headers = {}) {
  return call(
    '/gateway/capabilities/invoke',
    { capabilityId: `${path}@v1`, invocationId, contractDigest: digestOf(path), input },
    { ...USER, ...headers },
  );
}

async function listIds() {
  const res = await call('/rpc/devices/list', {});
  assert.equal(res.status, 200);
  return res.body.json.devices.map((d) => d.id);
}

before(async () => {
  peer = await spawnPeer();
  baseUrl = `http://127.0.0.1:${peer.port}`;
});

after(async () => {
  await stopPeer(peer.child);
});

describe('process', () => {
  test('prints exactly one ready line {"port":n}', () => {
    assert.match(peer.firstLine, /^\{"port":\d+\}$/);
    assert.ok(peer.port > 0);
    assert.equal(peer.stdout(), `${peer.firstLine}\n`);
  });

  test('exits when stdin closes', async () => {
    const p = await spawnPeer();
    p.child.stdin.end();
    const [code] = await once(p.child, 'exit');
    assert.equal(code, 0);
  });

  test('without --exit-on-stdin-close, stdin at EOF keeps it running', async () => {
    const p = await spawnPeer({ exitOnStdinClose: false, stdin: 'ignore' });
    const res = await fetch(`http://127.0.0.1:${p.port}/rpc/devices/list`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...USER },
      body: JSON.stringify({ json: {} }),
    });
    assert.equal(res.status, 200);
    assert.equal(p.child.exitCode, null);
    p.child.kill('SIGTERM');
    const [code] = await once(p.child, 'exit');
    assert.equal(code, 0);
  });

  test('exits on SIGTERM', async () => {
    const p = await spawnPeer();
    p.child.kill('SIGTERM');
    const [code] = await once(p.child, 'exit');
    assert.equal(code, 0);
  });
});

describe('auth', () => {
  test('missing token ⇒ UNAUTHORIZED 401, checked before input validation', async () => {
    assertError(await call('/rpc/devices/list', { limit: 0 }, {}), 401, 'UNAUTHORIZED', { message: 'Unauthorized' });
  });
  test('wrong token ⇒ UNAUTHORIZED', async () => {
    assertError(await call('/rpc/devices/list', {}, { authorization: 'Bearer nope' }), 401, 'UNAUTHORIZED');
  });
  test('approver token outside approvals.decide ⇒ UNAUTHORIZED', async () => {
    assertError(await call('/rpc/devices/list', {}, APPROVER), 401, 'UNAUTHORIZED');
    assertError(await call('/gateway/capabilities/describe', {}, APPROVER), 401, 'UNAUTHORIZED');
  });
});

describe('domain router /rpc', () => {
  test('devices.list returns the seed devices', async () => {
    const res = await call('/rpc/devices/list', {});
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      json: {
        devices: [
          { id: 'dev-1', name: 'Lobby camera', status: 'active' },
          { id: 'dev-2', name: 'Door sensor', status: 'active' },
          { id: 'dev-3', name: 'Old router', status: 'disabled' },
          { id: 'dev-locked', name: 'Core switch', status: 'active' },
        ],
      },
    });
  });

  test('devices.list over GET with ?data=, status filter and limit', async () => {
    const data = encodeURIComponent(JSON.stringify({ json: { status: 'active', limit: 2 } }));
    const res = await fetch(`${baseUrl}/rpc/devices/list?data=${data}`, { headers: USER });
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).json.devices.map((d) => d.id), ['dev-1', 'dev-2']);
  });

  test('GET on a POST-only procedure ⇒ 405 METHOD_NOT_SUPPORTED', async () => {
    const data = encodeURIComponent(JSON.stringify({ json: {} }));
    const res = await fetch(`${baseUrl}/rpc/agent/echoInvocation?data=${data}`, { headers: USER });
    assert.equal(res.status, 405);
    assert.equal((await res.json()).json.code, 'METHOD_NOT_SUPPORTED');
  });

  test('devices.list validation: limit out of range, null for optional', async () => {
    const e = assertError(await call('/rpc/devices/list', { limit: 101 }), 400, 'BAD_REQUEST', {
      message: 'Input validation failed',
    });
    assert.deepEqual(e.data.issues.map((i) => i.path), [['limit']]);
    assertError(await call('/rpc/devices/list', { status: null }), 400, 'BAD_REQUEST');
  });

  test('devices.disable: unknown id ⇒ defined NOT_FOUND with data, nothing changed', async () => {
    assertError(await call('/rpc/devices/disable', { deviceIds: ['dev-1', 'nope'] }), 404, 'NOT_FOUND', {
      defined: true,
      data: { deviceId: 'nope' },
    });
    const list = await call('/rpc/devices/list', { status: 'active' });
    assert.ok(list.body.json.devices.some((d) => d.id === 'dev-1'));
  });

  test('devices.disable: dev-locked ⇒ FORBIDDEN 403', async () => {
    assertError(await call('/rpc/devices/disable', { deviceIds: ['dev-locked'] }), 403, 'FORBIDDEN');
  });

  test('devices.disable: empty list ⇒ BAD_REQUEST', async () => {
    assertError(await call('/rpc/devices/disable', { deviceIds: [] }), 400, 'BAD_REQUEST');
  });

  test('devices.rename: renames, validates the name, unknown ⇒ NOT_FOUND', async () => {
    const res = await call('/rpc/devices/rename', { deviceId: 'dev-3', name: 'Older router' });
    assert.deepEqual(res.body, { json: { id: 'dev-3', name: 'Older router', status: 'disabled' } });
    assertError(await call('/rpc/devices/rename', { deviceId: 'dev-3', name: '' }), 400, 'BAD_REQUEST');
    assertError(await call('/rpc/devices/rename', { deviceId: 'dev-3', name: 'x'.repeat(65) }), 400, 'BAD_REQUEST');
    assertError(await call('/rpc/devices/rename', { deviceId: 'zzz', name: 'n' }), 404, 'NOT_FOUND', {
      defined: true,
      data: { deviceId: 'zzz' },
    });
  });

  test('devices.purge always ⇒ defined APPROVAL_REQUIRED 409 with a fresh approvalId', async () => {
    const a = assertError(await call('/rpc/devices/purge', { deviceIds: ['dev-1'] }), 409, 'APPROVAL_REQUIRED', {
      defined: true,
    });
    const b = assertError(await call('/rpc/devices/purge', { deviceIds: ['dev-1'] }), 409, 'APPROVAL_REQUIRED', {
      defined: true,
    });
    assert.match(a.data.approvalId, /^appr-\d+$/);
    assert.match(b.data.approvalId, /^appr-\d+$/);
    assert.notEqual(a.data.approvalId, b.data.approvalId);
    assert.ok((await listIds()).includes('dev-1'));
  });

  test('devices.stats carries meta codes 1 (Date), 0 (BigInt), 6 (Set), 7 (Map)', async () => {
    for (const res of [await call('/rpc/devices/stats', {}), await call('/rpc/devices/stats', undefined)]) {
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {
        json: {
          lastSeen: '2026-01-02T03:04:05.678Z',
          bytes: '9007199254740993',
          tags: ['camera', 'sensor'],
          counters: [
            ['dev-1', 3],
            ['dev-2', 0],
          ],
        },
        meta: [
          [1, 'lastSeen'],
          [0, 'bytes'],
          [6, 'tags'],
          [7, 'counters'],
        ],
      });
    }
  });

  test('the official RPCLink client decodes devices.stats and errors', async () => {
    const client = createORPCClient(new RPCLink({ url: `${baseUrl}/rpc`, headers: USER }));
    const stats = await client.devices.stats({});
    assert.ok(stats.lastSeen instanceof Date);
    assert.equal(stats.lastSeen.toISOString(), '2026-01-02T03:04:05.678Z');
    assert.equal(stats.bytes, 9007199254740993n);
    assert.deepEqual(stats.tags, new Set(['camera', 'sensor']));
    assert.deepEqual(stats.counters, new Map([['dev-1', 3], ['dev-2', 0]]));
    await assert.rejects(client.devices.disable({ deviceIds: ['nope'] }), (err) => {
      assert.equal(err.code, 'NOT_FOUND');
      assert.equal(err.status, 404);
      assert.deepEqual(err.data, { deviceId: 'nope' });
      return true;
    });
  });

  test('agent.echoInvocation echoes x-agent-invocation-id, defined error without it', async () => {
    const res = await call('/rpc/agent/echoInvocation', {}, { ...USER, 'x-agent-invocation-id': 'inv-123' });
    assert.deepEqual(res.body, { json: { invocationId: 'inv-123' } });
    assertError(await call('/rpc/agent/echoInvocation', {}), 400, 'MISSING_INVOCATION_ID', { defined: true });
  });

  test('debug.fail error kinds', async () => {
    const fail = (kind) => call('/rpc/debug/fail', { kind });
    assertError(await fail('unauthorized'), 401, 'UNAUTHORIZED');
    assertError(await fail('forbidden'), 403, 'FORBIDDEN');
    const internal = await fail('internal');
    assertError(internal, 500, 'INTERNAL_SERVER_ERROR', { message: 'Internal server error' });
    assert.ok(!internal.text.includes('secret'), internal.text);
    assertError(await fail('custom'), 429, 'RATE_LIMITED', { message: 'Slow down' });
    assertError(await fail('custom-no-status'), 500, 'TEAPOT', { message: 'TEAPOT' });
    assertError(await fail('output'), 500, 'INTERNAL_SERVER_ERROR', { message: 'Output validation failed' });
  });

  test('unmatched paths ⇒ 404 text/plain "Not found"', async () => {
    for (const path of ['/rpc/devices.disable', '/rpc/nope', '/gateway/nope', '/elsewhere']) {
      const res = await call(path, {});
      assert.equal(res.status, 404, path);
      assert.equal(res.contentType, 'text/plain');
      assert.equal(res.text, 'Not found');
    }
  });

  test('malformed JSON ⇒ 400 BAD_REQUEST', async () => {
    const res = await fetch(`${baseUrl}/rpc/devices/list`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...USER },
      body: '{"json":',
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).json.code, 'BAD_REQUEST');
  });

  test('constructs.* echo every input sample as zod parses it', async () => {
    for (const c of constructs) {
      for (const sample of c.samples.input) {
        const res = await call(`/rpc/constructs/${c.name}`, sample);
        assert.equal(res.status, 200, `${c.name} ${JSON.stringify(sample)}: ${res.text}`);
        assert.deepEqual(res.body.json, c.input.parse(sample), c.name);
      }
    }
  });
});

describe('governed gateway /gateway', () => {
  test('capabilities.describe returns the committed descriptors fixture', async () => {
    const res = await call('/gateway/capabilities/describe', {});
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.json, descriptors);
    assert.deepEqual(
      descriptors.map((d) => [d.path, d.effect, d.requiresApproval, d.capabilityId]),
      [
        ['devices.disable', 'write', false, 'devices.disable@v1'],
        ['devices.locate', 'read', false, 'devices.locate@v1'],
        ['devices.purge', 'destructive', true, 'devices.purge@v1'],
        ['mail.send', 'external', false, 'mail.send@v1'],
      ],
    );
    for (const d of descriptors) assert.equal(d.contractDigest, contractDigest(d.inputSchema));
    assert.ok(descriptors.find((d) => d.path === 'devices.locate').modelOutputSchema);
  });

  test('canonical JSON sorts keys and drops whitespace', () => {
    assert.equal(canonicalJson({ b: [1, { d: 'x', c: null }], a: true }), '{"a":true,"b":[1,{"c":null,"d":"x"}]}');
  });

  test('invoke: digest mismatch ⇒ CONTRACT_MISMATCH 409, nothing executed', async () => {
    const res = await call('/gateway/capabilities/invoke', {
      capabilityId: 'devices.disable@v1',
      invocationId: 'mismatch-1',
      contractDigest: 'sha256:0000',
      input: { deviceIds: ['dev-2'] },
    });
    assertError(res, 409, 'CONTRACT_MISMATCH', {
      defined: true,
      data: { capabilityId: 'devices.disable@v1', contractDigest: digestOf('devices.disable') },
    });
    assertError(await call('/gateway/capabilities/getInvocation', { invocationId: 'mismatch-1' }), 404, 'NOT_FOUND', {
      defined: true,
    });
  });

  test('invoke: invalid capability input ⇒ BAD_REQUEST; unknown capability ⇒ NOT_FOUND', async () => {
    const e = assertError(await invoke('devices.disable', 'bad-1', { deviceIds: [] }), 400, 'BAD_REQUEST', {
      message: 'Input validation failed',
    });
    assert.deepEqual(e.data.issues[0].path, ['deviceIds']);
    assertError(await invoke('mail.send', 'bad-2', { to: 'not-an-email', subject: 's' }), 400, 'BAD_REQUEST');
    const unknown = await call('/gateway/capabilities/invoke', {
      capabilityId: 'devices.disable',
      invocationId: 'bad-3',
      contractDigest: digestOf('devices.disable'),
      input: { deviceIds: ['dev-2'] },
    });
    assertError(unknown, 404, 'NOT_FOUND', { defined: true, data: { capabilityId: 'devices.disable' } });
  });

  test('invoke devices.disable completes; a repeat returns the stored receipt without executing', async () => {
    const first = await invoke('devices.disable', 'inv-disable-1', { deviceIds: ['dev-2'] });
    assert.equal(first.status, 200);
    const receipt = first.body.json;
    assert.equal(receipt.status, 'completed');
    assert.equal(receipt.invocationId, 'inv-disable-1');
    assert.match(receipt.executionId, /^exec-\d+$/);
    assert.deepEqual(receipt.output, { disabled: ['dev-2'] });
    const repeat = await invoke('devices.disable', 'inv-disable-1', { deviceIds: ['dev-2'] });
    assert.deepEqual(repeat.body.json, receipt);
    // A fresh invocation does execute again: dev-2 is already disabled.
    const fresh = await invoke('devices.disable', 'inv-disable-2', { deviceIds: ['dev-2'] });
    assert.equal(fresh.body.json.status, 'completed');
    assert.notEqual(fresh.body.json.executionId, receipt.executionId);
    assert.deepEqual(fresh.body.json.output, { disabled: [] });
    const stored = await call('/gateway/capabilities/getInvocation', { invocationId: 'inv-disable-1' });
    assert.deepEqual(stored.body.json, receipt);
  });

  test('invoke devices.disable on dev-locked ⇒ failed FORBIDDEN receipt', async () => {
    const r = (await invoke('devices.disable', 'inv-disable-locked', { deviceIds: ['dev-locked'] })).body.json;
    assert.equal(r.status, 'failed');
    assert.equal(r.error.code, 'FORBIDDEN');
  });

  test('invoke mail.send ⇒ outcome-unknown, stored for getInvocation', async () => {
    const r = (await invoke('mail.send', 'inv-mail-1', { to: 'a@example.com', subject: 'Hi' })).body.json;
    assert.deepEqual(Object.keys(r).sort(), ['executionId', 'invocationId', 'status']);
    assert.equal(r.status, 'outcome-unknown');
    assert.equal(r.invocationId, 'inv-mail-1');
    assert.deepEqual((await call('/gateway/capabilities/getInvocation', { invocationId: 'inv-mail-1' })).body.json, r);
  });

  test('invoke devices.locate: failed FORBIDDEN / PROVIDER_DOWN, cancelled, completed', async () => {
    const locate = async (deviceId) => (await invoke('devices.locate', `inv-locate-${deviceId}`, { deviceId })).body.json;
    const locked = await locate('dev-locked');
    assert.equal(locked.status, 'failed');
    assert.equal(locked.error.code, 'FORBIDDEN');
    assert.equal(typeof locked.error.message, 'string');
    const down = await locate('dev-3');
    assert.equal(down.status, 'failed');
    assert.equal(down.error.code, 'PROVIDER_DOWN');
    const cancelled = await locate('dev-2');
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(Object.keys(cancelled).sort(), ['executionId', 'invocationId', 'status']);
    const ok = await locate('dev-1');
    assert.equal(ok.status, 'completed');
    assert.deepEqual(ok.output, { deviceId: 'dev-1', room: 'Lobby' });
  });

  test('devices.purge: approval-required → decide → resume completes once; devices gone', async () => {
    const first = (await invoke('devices.purge', 'inv-purge-1', { deviceIds: ['dev-1', 'dev-3'] })).body.json;
    assert.equal(first.status, 'approval-required');
    assert.match(first.approvalId, /^appr-\d+$/);
    assert.deepEqual(Object.keys(first).sort(), ['approvalId', 'executionId', 'invocationId', 'status']);
    assert.ok((await listIds()).includes('dev-1'));

    const pending = await call('/gateway/capabilities/resume', { invocationId: 'inv-purge-1' });
    assert.deepEqual(pending.body.json, first);

    const decide = { approvalId: first.approvalId, decision: 'approve' };
    assertError(await call('/gateway/approvals/decide', decide, USER), 403, 'FORBIDDEN');
    assertError(await call('/gateway/approvals/decide', decide, {}), 401, 'UNAUTHORIZED');
    assertError(await call('/gateway/approvals/decide', { ...decide, approvalId: 'appr-999' }, APPROVER), 404, 'NOT_FOUND', {
      defined: true,
    });
    assert.deepEqual((await call('/gateway/approvals/decide', decide, APPROVER)).body.json, decide);

    assertError(await call('/gateway/capabilities/resume', { invocationId: 'inv-purge-1' }, APPROVER), 401, 'UNAUTHORIZED');
    const done = (await call('/gateway/capabilities/resume', { invocationId: 'inv-purge-1' })).body.json;
    assert.deepEqual(done, {
      status: 'completed',
      invocationId: 'inv-purge-1',
      executionId: first.executionId,
      output: { purged: ['dev-1', 'dev-3'] },
    });
    const ids = await listIds();
    assert.ok(!ids.includes('dev-1') && !ids.includes('dev-3'), ids.join());
    // Resuming or re-invoking again returns the stored receipt; nothing runs twice.
    assert.deepEqual((await call('/gateway/capabilities/resume', { invocationId: 'inv-purge-1' })).body.json, done);
    assert.deepEqual((await invoke('devices.purge', 'inv-purge-1', { deviceIds: ['dev-1', 'dev-3'] })).body.json, done);
    assert.deepEqual((await call('/gateway/capabilities/getInvocation', { invocationId: 'inv-purge-1' })).body.json, done);
  });

  test('domain devices.purge with x-agent-invocation-id: held, shown to the approver, resumed once', async () => {
    const held = { ...USER, 'x-agent-invocation-id': 'confirmed-purge-1' };
    const a = assertError(await call('/rpc/devices/purge', { deviceIds: ['dev-2'] }, held), 409, 'APPROVAL_REQUIRED', {
      defined: true,
    });
    // The same id asks again for the same approval.
    const b = assertError(await call('/rpc/devices/purge', { deviceIds: ['dev-2'] }, held), 409, 'APPROVAL_REQUIRED', {
      defined: true,
    });
    assert.equal(a.data.approvalId, b.data.approvalId);
    const get = { approvalId: a.data.approvalId };
    assertError(await call('/gateway/approvals/get', get, USER), 403, 'FORBIDDEN');
    assert.deepEqual((await call('/gateway/approvals/get', get, APPROVER)).body.json, {
      approvalId: a.data.approvalId,
      decision: 'pending',
      invocationId: 'confirmed-purge-1',
      capabilityId: 'devices.purge@v1',
      input: { deviceIds: ['dev-2'] },
    });
    assert.ok((await listIds()).includes('dev-2'));
    const decide = { approvalId: a.data.approvalId, decision: 'approve' };
    assert.deepEqual((await call('/gateway/approvals/decide', decide, APPROVER)).body.json, decide);
    const done = (await call('/gateway/capabilities/resume', { invocationId: 'confirmed-purge-1' })).body.json;
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.output, { purged: ['dev-2'] });
    assert.ok(!(await listIds()).includes('dev-2'));
    assert.deepEqual((await call('/gateway/capabilities/resume', { invocationId: 'confirmed-purge-1' })).body.json, done);
    // The id is spent: the domain procedure refuses it now.
    assertError(await call('/rpc/devices/purge', { deviceIds: ['dev-2'] }, held), 409, 'CONFLICT');
  });

  test('devices.purge rejected ⇒ resume returns failed APPROVAL_REJECTED; device kept', async () => {
    const first = (await invoke('devices.purge', 'inv-purge-2', { deviceIds: ['dev-locked'] })).body.json;
    assert.equal(first.status, 'approval-required');
    const decision = { approvalId: first.approvalId, decision: 'reject' };
    assert.deepEqual((await call('/gateway/approvals/decide', decision, APPROVER)).body.json, decision);
    // The first decision stands.
    assert.deepEqual(
      (await call('/gateway/approvals/decide', { ...decision, decision: 'approve' }, APPROVER)).body.json,
      decision,
    );
    const r = (await call('/gateway/capabilities/resume', { invocationId: 'inv-purge-2' })).body.json;
    assert.equal(r.status, 'failed');
    assert.equal(r.error.code, 'APPROVAL_REJECTED');
    assert.equal(r.executionId, first.executionId);
    assert.ok((await listIds()).includes('dev-locked'));
  });

  test('resume / getInvocation of an unknown invocation ⇒ NOT_FOUND', async () => {
    for (const p of ['/gateway/capabilities/resume', '/gateway/capabilities/getInvocation']) {
      assertError(await call(p, { invocationId: 'never' }), 404, 'NOT_FOUND', {
        defined: true,
        data: { invocationId: 'never' },
      });
    }
  });

  test('x-test-drop-response: no response, receipt stored; reconciled via getInvocation', async () => {
    const input = { deviceId: 'dev-1' };
    await assert.rejects(invoke('devices.locate', 'inv-drop-1', input, { 'x-test-drop-response': '1' }));
    const stored = (await call('/gateway/capabilities/getInvocation', { invocationId: 'inv-drop-1' })).body.json;
    assert.equal(stored.invocationId, 'inv-drop-1');
    assert.equal(stored.status, 'completed');
    assert.deepEqual(stored.output, { deviceId: 'dev-1', room: 'Lobby' });
    assert.deepEqual((await invoke('devices.locate', 'inv-drop-1', input)).body.json, stored);
  });

  test('x-test-drop-response on a completing mutation executes it exactly once', async () => {
    const p = await spawnPeer();
    const url = `http://127.0.0.1:${p.port}`;
    try {
      const post = (path, json, headers = {}) =>
        fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...USER, ...headers },
          body: JSON.stringify({ json }),
        });
      const req = {
        capabilityId: 'devices.disable@v1',
        invocationId: 'drop-2',
        contractDigest: digestOf('devices.disable'),
        input: { deviceIds: ['dev-1'] },
      };
      await assert.rejects(post('/gateway/capabilities/invoke', req, { 'x-test-drop-response': '1' }));
      const stored = await (await post('/gateway/capabilities/getInvocation', { invocationId: 'drop-2' })).json();
      assert.equal(stored.json.status, 'completed');
      assert.deepEqual(stored.json.output, { disabled: ['dev-1'] });
      const list = await (await post('/rpc/devices/list', { status: 'disabled' })).json();
      assert.deepEqual(list.json.devices.map((d) => d.id), ['dev-1', 'dev-3']);
      const repeat = await (await post('/gateway/capabilities/invoke', req)).json();
      assert.deepEqual(repeat.json, stored.json);
    } finally {
      await stopPeer(p.child);
    }
  });

  test('x-test-mismatch-invocation answers with "other-" + invocationId, stores the right one', async () => {
    const res = await invoke('devices.locate', 'inv-mm-1', { deviceId: 'dev-1' }, { 'x-test-mismatch-invocation': '1' });
    assert.equal(res.status, 200);
    assert.equal(res.body.json.invocationId, 'other-inv-mm-1');
    assert.equal(res.body.json.status, 'completed');
    const stored = (await call('/gateway/capabilities/getInvocation', { invocationId: 'inv-mm-1' })).body.json;
    assert.equal(stored.invocationId, 'inv-mm-1');
    assert.equal(stored.executionId, res.body.json.executionId);
  });
});

describe('fixtures', () => {
  test('manifest path check rejects unsafe segments, prefix conflicts and collisions', () => {
    assert.deepEqual(pathProblems(['devices.disable', 'constructs.optionalNullable']), []);
    assert.deepEqual(pathProblems(['a.b', 'a.b.c', 'x.listAll', 'x.list_all', 'x.__proto__', 'y.9a']), [
      'x.list_all: collides with x.listAll',
      'x.__proto__: unsafe segment "__proto__"',
      'y.9a: unsafe segment "9a"',
      'a.b: is a prefix of a.b.c',
    ]);
  });

  test('every manifest fixture has valid paths, effects and schemas', () => {
    const effects = new Set(['server-query', 'server-mutation', 'external-side-effect', 'destructive']);
    for (const name of ['devices.manifest.json', 'codegen/orpc.manifest.json', 'codegen/zod.manifest.json']) {
      const manifest = JSON.parse(readFileSync(join(fixturesDir, name), 'utf8'));
      assert.deepEqual(Object.keys(manifest), ['tools'], name);
      assert.deepEqual(pathProblems(Object.keys(manifest.tools)), [], name);
      for (const [path, tool] of Object.entries(manifest.tools)) {
        assert.ok(tool.description, `${name} ${path}`);
        assert.equal(typeof tool.inputSchema, 'object', `${name} ${path}`);
        assert.ok(effects.has(tool.effect), `${name} ${path}`);
      }
    }
    const devices = JSON.parse(readFileSync(join(fixturesDir, 'devices.manifest.json'), 'utf8'));
    assert.deepEqual(Object.keys(devices.tools), [
      'agent.echoInvocation',
      'devices.disable',
      'devices.list',
      'devices.purge',
      'devices.rename',
      'devices.stats',
    ]);
    assert.equal(devices.tools['devices.purge'].effect, 'destructive');
    assert.equal(devices.tools['devices.purge'].requiresApproval, true);
    assert.deepEqual(
      Object.entries(devices.tools)
        .filter(([, t]) => t.outputSchema)
        .map(([p]) => p),
      ['devices.list'],
    );
    const codegen = JSON.parse(readFileSync(join(fixturesDir, 'codegen/orpc.manifest.json'), 'utf8'));
    assert.deepEqual(Object.keys(codegen.tools), constructs.map((c) => `constructs.${c.name}`).sort());
  });

  test('generate.mjs --check: committed fixtures match the contracts', async () => {
    const child = spawn(process.execPath, [join(peerDir, 'scripts', 'generate.mjs'), '--check'], { stdio: 'pipe' });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const [code] = await once(child, 'exit');
    assert.equal(code, 0, err);
  });
});
