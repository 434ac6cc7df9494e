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
import { canonicalJson, sha256Hex } from '../src/json.mjs';
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
  test('the approver token is no requester credential ⇒ UNAUTHORIZED', async () => {
    assertError(await call('/rpc/devices/list', {}, APPROVER), 401, 'UNAUTHORIZED');
    assertError(await call('/gateway/describe', {}, APPROVER), 401, 'UNAUTHORIZED');
    assertError(await call('/capabilities/describe', {}, APPROVER), 401, 'UNAUTHORIZED');
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

  test('devices.purge without an invocation id ⇒ defined APPROVAL_REQUIRED 409 with a fresh approvalId', async () => {
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
    for (const path of ['/rpc/devices.disable', '/rpc/nope', '/gateway/nope', '/gateway/capabilities/resume', '/elsewhere']) {
      const res = await call(path, {});
      assert.equal(res.status, 404, path);
      assert.equal(res.contentType, 'text/plain');
      assert.equal(res.text, 'Not found');
    }
  });

  test('unmatched paths under /capabilities ⇒ 404 {"error":"no such procedure"} (as recorded)', async () => {
    for (const path of ['/capabilities/resume', '/capabilities/capabilities/invoke']) {
      const res = await call(path, { invocationId: 'x' });
      assert.equal(res.status, 404, path);
      assert.deepEqual(res.body, { error: 'no such procedure' });
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

describe('fixtures', () => {
  test('canonical JSON sorts keys and drops whitespace; digests are bare lowercase hex', () => {
    assert.equal(canonicalJson({ b: [1, { d: 'x', c: null }], a: true }), '{"a":true,"b":[1,{"c":null,"d":"x"}]}');
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

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
