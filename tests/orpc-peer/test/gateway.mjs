// Self-test of the peer's governed gateways (README.md, "Governed
// gateways"): the interop gateway replays the 36 exchanges recorded from
// orpc-agent's real gateway (tests/fixtures/originals/gateway), then the
// contract's edges (strict requests, auth, expiry, the decision endpoint)
// and the examples' gateway (`/gateway`) with its test controls.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';

const peerDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const originals = join(peerDir, '..', 'fixtures', 'originals');
const EXCHANGES = JSON.parse(readFileSync(join(originals, 'gateway', 'exchanges.normalized.json'), 'utf8'));
const USER = { authorization: 'Bearer user-token' };
const APPROVER = { authorization: 'Bearer approver-token' };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** Spawns a peer with `args`; resolves to { child, base }. */
async function spawnPeer(args = []) {
  const child = spawn(process.execPath, [join(peerDir, 'server.mjs'), '--port', '0', '--exit-on-stdin-close', ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  const line = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`peer exited early with ${code}`)));
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
  });
  return { child, base: `http://127.0.0.1:${JSON.parse(line).port}` };
}

async function stopPeer(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.stdin.end();
  await once(child, 'exit');
}

/** A request to `base + path`: oRPC-wrapped unless `plain`. */
async function post(base, path, body, headers = USER, { plain = false } = {}) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(plain ? body : { json: body }),
  });
  const text = await res.text();
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, body: plain ? parsed : parsed?.json, raw: parsed };
}

/**
 * Compares `actual` with the recorded `expected`: a `<kind#n>` placeholder
 * binds to the first value it meets and must stay the same; `<timestamp>`
 * and recorded ISO times match any ISO time; `digests` maps recorded
 * contract digests to the peer's.
 */
function matches(actual, expected, env, where = '$') {
  if (typeof expected === 'string') {
    const placeholder = /^<([A-Za-z]+)#\d+>$/.exec(expected);
    if (placeholder) {
      if (!(expected in env.bound)) env.bound[expected] = actual;
      assert.equal(actual, env.bound[expected], `${where}: ${expected}`);
      return;
    }
    if (expected === '<timestamp>' || ISO.test(expected)) {
      assert.match(String(actual), ISO, where);
      return;
    }
    assert.equal(actual, env.digests[expected] ?? expected, where);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${where}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, where);
    expected.forEach((e, i) => matches(actual[i], e, env, `${where}[${i}]`));
    return;
  }
  if (expected && typeof expected === 'object') {
    assert.ok(actual && typeof actual === 'object', `${where}: expected an object, got ${JSON.stringify(actual)}`);
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), where);
    for (const key of Object.keys(expected)) matches(actual[key], expected[key], env, `${where}.${key}`);
    return;
  }
  assert.equal(actual, expected, where);
}

/** The recorded request body with bound placeholders and the peer's digests. */
function substitute(value, env) {
  if (typeof value === 'string') {
    if (value in env.bound) return env.bound[value];
    if (value.startsWith('sha256:')) return `sha256:${env.digests[value.slice(7)] ?? value.slice(7)}`;
    return env.digests[value] ?? value;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, env));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, env)]));
  return value;
}

describe('interop gateway /capabilities replays the recorded exchanges', () => {
  let peer;
  before(async () => {
    peer = await spawnPeer();
  });
  after(() => stopPeer(peer.child));

  test('exchanges 01–35 in order, and the devices of 36', async () => {
    const env = { bound: {}, digests: {} };
    for (const exchange of EXCHANGES) {
      const { request, response, name } = exchange;
      const headers = {};
      if (request.auth) headers.authorization = request.auth.replace('peer-token', 'user-token');
      if (name === '36-peer-state') {
        const state = await (await fetch(`${peer.base}${request.path}`)).json();
        assert.deepEqual(state.devices, response.body.devices, name);
        assert.equal(state.revision, 'peer-rev-2');
        assert.deepEqual(
          state.effects.map((e) => [e.capabilityId, e.input]),
          response.body.effects.map((e) => [e.capabilityId, e.input]),
          name,
        );
        continue;
      }
      const oRpc = request.path.startsWith('/capabilities/');
      const body = substitute(oRpc ? request.body.json : request.body, env);
      const res = await post(peer.base, request.path, body, headers, { plain: !oRpc });
      assert.equal(res.status, response.status, `${name}: ${JSON.stringify(res.raw)}`);
      if (name === '01-describe') {
        for (const [i, d] of response.body.json.entries()) {
          assert.match(res.body[i].contractDigest, /^[0-9a-f]{64}$/, name);
          env.digests[d.contractDigest] = res.body[i].contractDigest;
        }
      }
      // An oRPC answer is `{json: …}` (also its errors); 28's 404 is plain.
      const wrapped = oRpc && 'json' in response.body;
      matches(wrapped ? res.raw?.json : res.raw, wrapped ? response.body.json : response.body, env, name);
    }
  });
});

describe('interop gateway: the contract at its edges', () => {
  let peer;
  before(async () => {
    peer = await spawnPeer(['--approval-ttl-ms', '200']);
  });
  after(() => stopPeer(peer.child));
  const cap = (path, body, headers) => post(peer.base, `/capabilities/${path}`, body, headers);

  test('every procedure: no token or the approver token ⇒ UNAUTHORIZED 401, before validation', async () => {
    for (const p of ['describe', 'invoke', 'getInvocation', 'getApproval', 'resumeApproval']) {
      for (const headers of [{}, APPROVER, { authorization: 'Bearer nope' }]) {
        const res = await cap(p, { surface: 'direct' }, headers);
        assert.equal(res.status, 401, p);
        assert.deepEqual(res.body, { defined: false, code: 'UNAUTHORIZED', status: 401, message: 'Unauthorized' });
      }
    }
  });

  test('strict requests: unknown keys, missing ids, ids over 256 characters ⇒ BAD_REQUEST 400', async () => {
    const bad = {
      describe: [{ scope: { paths: [] } }, { all: true }],
      invoke: [{ invocationId: 'x'.repeat(257), capabilityId: 'devices.list', input: {} }, { capabilityId: 'devices.list', input: {} }],
      getInvocation: [{ invocationId: '' }, { invocationId: 'a', extra: 1 }],
      getApproval: [{ approvalId: 'x'.repeat(257) }, {}],
      resumeApproval: [{ invocationId: 'a' }, { invocationId: 'a', approvalId: 'b', surface: 'direct' }],
    };
    for (const [p, bodies] of Object.entries(bad)) {
      for (const body of bodies) {
        const res = await cap(p, body);
        assert.equal(res.status, 400, `${p} ${JSON.stringify(body)}`);
        assert.deepEqual(res.body.data, { issues: [{ message: 'Invalid capability gateway request' }] });
      }
    }
    const ok = await cap('getInvocation', { invocationId: 'x'.repeat(256) });
    assert.deepEqual([ok.status, ok.body], [200, null]);
  });

  test('an approval expires: getApproval says so, resume fails APPROVAL_EXPIRED, deciding is refused', async () => {
    const asked = await cap('invoke', { invocationId: 'exp-1', capabilityId: 'devices.purge', input: { deviceIds: ['d2'] } });
    const approval = asked.body.approval;
    assert.equal(approval.status, 'pending');
    assert.equal(Date.parse(approval.expiresAt) - Date.parse(approval.requestedAt), 200);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await cap('getApproval', { approvalId: approval.id })).body.status, 'expired');
    const late = await post(peer.base, '/approvals/decide', { approvalId: approval.id, status: 'approved' }, APPROVER, { plain: true });
    assert.equal(late.status, 409);
    assert.equal(late.body.approval.status, 'expired');
    const resumed = await cap('resumeApproval', { invocationId: 'exp-1', approvalId: approval.id });
    assert.equal(resumed.body.status, 'failed');
    assert.equal(resumed.body.error.code, 'APPROVAL_EXPIRED');
    assert.match(resumed.body.executionId, /^exec-\d+$/);
    const state = await (await fetch(`${peer.base}/__peer/state`)).json();
    assert.equal(state.devices.find((d) => d.id === 'd2').purged, false);
  });

  test('the decision endpoint: approver token only, strict body, unknown id, first decision stands', async () => {
    const asked = await cap('invoke', { invocationId: 'dec-1', capabilityId: 'devices.purge', input: { deviceIds: ['d1'] } });
    const id = asked.body.approval.id;
    const decide = (body, headers = APPROVER) => post(peer.base, '/approvals/decide', body, headers, { plain: true });
    assert.equal((await decide({ approvalId: id, status: 'approved' }, USER)).status, 403);
    assert.equal((await decide({ approvalId: id, status: 'approved' }, {})).status, 401);
    assert.equal((await decide({ approvalId: id, status: 'approve' })).status, 400);
    assert.equal((await decide({ approvalId: id, status: 'approved', by: 'me' })).status, 400);
    assert.equal((await decide({ approvalId: 'appr-999', status: 'approved' })).status, 404);
    const first = await decide({ approvalId: id, status: 'rejected', comment: 'no' });
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.decision.approver, { id: 'approver-1', kind: 'user' });
    assert.equal(first.body.decision.comment, 'no');
    const second = await decide({ approvalId: id, status: 'approved' });
    assert.equal(second.status, 409);
    assert.equal(second.body.approval.status, 'rejected');
    assert.equal(second.body.approval.decision.status, 'rejected');
  });

  test('a resume for another invocation, or with an approval of another call, is refused as not found', async () => {
    const a = await cap('invoke', { invocationId: 'pair-a', capabilityId: 'devices.purge', input: { deviceIds: ['d1'] } });
    await cap('invoke', { invocationId: 'pair-b', capabilityId: 'devices.purge', input: { deviceIds: ['d3'] } });
    for (const body of [
      { invocationId: 'pair-b', approvalId: a.body.approval.id },
      { invocationId: 'never-seen', approvalId: a.body.approval.id },
    ]) {
      const res = await cap('resumeApproval', body);
      assert.deepEqual(res.body, {
        status: 'failed',
        invocationId: body.invocationId,
        executionId: '',
        error: { code: 'CAPABILITY_NOT_FOUND', message: 'Capability not found.', retryable: false },
      });
    }
  });
});

describe('examples gateway /gateway', () => {
  let peer;
  before(async () => {
    peer = await spawnPeer();
  });
  after(() => stopPeer(peer.child));
  const gw = (path, body, headers) => post(peer.base, `/gateway/${path}`, body, headers);
  const invoke = (invocationId, capabilityId, input, headers) => gw('invoke', { invocationId, capabilityId, input }, headers);
  const deviceIds = async () => (await post(peer.base, '/rpc/devices/list', {})).body.devices.map((d) => d.id);

  test('describe: four capabilities, descriptors version 1, purge requires approval', async () => {
    const res = await gw('describe', {});
    assert.deepEqual(
      res.body.map((d) => [d.id, d.sideEffect, d.requiresApproval ?? false]),
      [
        ['devices.disable', 'write', false],
        ['devices.locate', 'read', false],
        ['devices.purge', 'destructive', true],
        ['mail.send', 'external', false],
      ],
    );
    for (const d of res.body) {
      assert.equal(d.version, 1);
      assert.deepEqual(d.path, d.id.split('.'));
      assert.match(d.contractDigest, /^[0-9a-f]{64}$/);
    }
  });

  test('failed, cancelled and completed outcomes of devices.locate and devices.disable', async () => {
    assert.equal((await invoke('loc-1', 'devices.locate', { deviceId: 'dev-locked' })).body.error.code, 'FORBIDDEN');
    const down = (await invoke('loc-2', 'devices.locate', { deviceId: 'dev-3' })).body;
    assert.deepEqual([down.status, down.error.code, down.error.retryable], ['failed', 'EXECUTION_FAILED', true]);
    const cancelled = (await invoke('loc-3', 'devices.locate', { deviceId: 'dev-2' })).body;
    assert.deepEqual([cancelled.status, cancelled.error.code], ['cancelled', 'CANCELLED']);
    assert.deepEqual((await invoke('loc-4', 'devices.locate', { deviceId: 'dev-1' })).body.output, { deviceId: 'dev-1', room: 'Lobby' });
    assert.deepEqual((await invoke('dis-1', 'devices.disable', { deviceIds: ['dev-1'] })).body.output, { disabled: ['dev-1'] });
  });

  test('mail.send: outcome-unknown, the receipt stays pending', async () => {
    assert.deepEqual((await invoke('mail-1', 'mail.send', { to: 'a@example.com', subject: 'Hi' })).body, {
      status: 'outcome-unknown',
      invocationId: 'mail-1',
    });
    const receipt = (await gw('getInvocation', { invocationId: 'mail-1' })).body;
    assert.equal(receipt.state, 'pending');
    assert.equal(receipt.outcome, undefined);
  });

  test('domain devices.purge with x-agent-invocation-id: held through the gateway, resumable there', async () => {
    const held = { ...USER, 'x-agent-invocation-id': 'confirmed-purge-1' };
    const a = await post(peer.base, '/rpc/devices/purge', { deviceIds: ['dev-2'] }, held);
    assert.equal(a.status, 409);
    assert.equal(a.body.code, 'APPROVAL_REQUIRED');
    const b = await post(peer.base, '/rpc/devices/purge', { deviceIds: ['dev-2'] }, held);
    assert.equal(b.body.data.approvalId, a.body.data.approvalId, 'the same id asks for the same approval');
    const approvalId = a.body.data.approvalId;
    const receipt = (await gw('getInvocation', { invocationId: 'confirmed-purge-1' })).body;
    assert.deepEqual([receipt.capabilityId, receipt.correlationId, receipt.approvalId], ['devices.purge', 'confirmed-purge-1', approvalId]);
    assert.ok((await deviceIds()).includes('dev-2'));
    const decided = await post(peer.base, '/approvals/decide', { approvalId, status: 'approved' }, APPROVER, { plain: true });
    assert.equal(decided.body.status, 'approved');
    const done = (await gw('resumeApproval', { invocationId: 'confirmed-purge-1', approvalId })).body;
    assert.deepEqual([done.status, done.output], ['completed', { purged: ['dev-2'] }]);
    assert.ok(!(await deviceIds()).includes('dev-2'));
    assert.deepEqual((await post(peer.base, '/rpc/devices/purge', { deviceIds: ['dev-2'] }, held)).body, { purged: ['dev-2'] });
    const other = await post(peer.base, '/rpc/devices/purge', { deviceIds: ['dev-1'] }, held);
    assert.deepEqual([other.status, other.body.code], [409, 'CONFLICT']);
  });

  test('x-test-drop-response: no answer, the journal has it; x-test-mismatch-invocation answers for "other-" + id', async () => {
    await assert.rejects(invoke('drop-1', 'devices.locate', { deviceId: 'dev-1' }, { ...USER, 'x-test-drop-response': '1' }));
    const receipt = (await gw('getInvocation', { invocationId: 'drop-1' })).body;
    assert.deepEqual([receipt.state, receipt.outcome.status], ['settled', 'completed']);
    const mm = (await invoke('mm-1', 'devices.locate', { deviceId: 'dev-1' }, { ...USER, 'x-test-mismatch-invocation': '1' })).body;
    assert.equal(mm.invocationId, 'other-mm-1');
    assert.equal((await gw('getInvocation', { invocationId: 'mm-1' })).body.outcome.invocationId, 'mm-1');
  });
});
