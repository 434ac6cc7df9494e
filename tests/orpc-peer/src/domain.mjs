// The domain router mounted at /rpc (README.md, "Domain router").
// Every procedure carries `meta.agent` (orpc-agent style) used by the
// manifest generator; `debug.fail` has `agent: false` and stays out of the
// agent manifest.

import { z } from 'zod';
import { ORPCError } from '@orpc/server';
import { requester, headerValue } from './auth.mjs';
import { createState, LOCKED_DEVICE_ID } from './state.mjs';

export const DeviceStatus = z.enum(['active', 'disabled']);
export const Device = z.object({ id: z.string(), name: z.string(), status: DeviceStatus });
export const DeviceList = z.object({ devices: z.array(Device) });
export const DisableInput = z.object({
  deviceIds: z.array(z.string()).min(1),
  reason: z.string().optional(),
});
export const PurgeInput = z.object({ deviceIds: z.array(z.string()) });

const NOT_FOUND = { status: 404, message: 'Device not found', data: z.object({ deviceId: z.string() }) };

/** Fixed values of devices.stats (deterministic so tests can assert them). */
export const STATS = Object.freeze({
  lastSeen: '2026-01-02T03:04:05.678Z',
  bytes: 9007199254740993n, // 2^53 + 1: not representable as a JS number
  tags: ['camera', 'sensor'],
  counters: [
    ['dev-1', 3],
    ['dev-2', 0],
  ],
});

/**
 * Disables `ids` atomically: every id is checked first (unknown ⇒
 * `{ error: 'NOT_FOUND', deviceId }`, `dev-locked` ⇒ `{ error: 'FORBIDDEN',
 * deviceId }`), then the active ones are disabled. Returns `{ disabled }`,
 * the ids whose status changed, each once, in request order.
 */
export function disableDevices(state, ids) {
  for (const id of ids) {
    if (!state.devices.has(id)) return { error: 'NOT_FOUND', deviceId: id };
    if (id === LOCKED_DEVICE_ID) return { error: 'FORBIDDEN', deviceId: id };
  }
  const disabled = [];
  for (const id of ids) {
    const device = state.devices.get(id);
    if (device.status !== 'disabled') {
      device.status = 'disabled';
      disabled.push(id);
    }
  }
  return { disabled };
}

/**
 * The domain router over `state`; `governed` is the `/gateway` gateway
 * (`{ invoke }`) its `devices.purge` dispatches through.
 */
export function createDomainRouter(state = createState(), governed = { invoke: () => { throw new Error('no gateway'); } }) {
  const withNotFound = requester.errors({ NOT_FOUND });

  const devices = {
    list: requester
      .route({ method: 'GET' })
      .meta({ agent: { sideEffect: 'read', description: 'List devices, optionally filtered by status', modelOutput: DeviceList } })
      .input(z.object({ status: DeviceStatus.optional(), limit: z.int().min(1).max(100).optional() }))
      .output(DeviceList)
      .handler(({ input }) => {
        let list = [...state.devices.values()].map((d) => ({ ...d }));
        if (input.status) list = list.filter((d) => d.status === input.status);
        if (input.limit !== undefined) list = list.slice(0, input.limit);
        return { devices: list };
      }),

    disable: withNotFound
      .meta({ agent: { sideEffect: 'write', description: 'Disable devices' } })
      .input(DisableInput)
      .output(z.object({ disabled: z.array(z.string()) }))
      .handler(({ input, errors }) => {
        const result = disableDevices(state, input.deviceIds);
        if (result.error === 'NOT_FOUND') throw errors.NOT_FOUND({ data: { deviceId: result.deviceId } });
        if (result.error === 'FORBIDDEN') {
          throw new ORPCError('FORBIDDEN', { message: `Device ${result.deviceId} is locked` });
        }
        return result;
      }),

    rename: withNotFound
      .meta({ agent: { sideEffect: 'write', description: 'Rename a device' } })
      .input(z.object({ deviceId: z.string(), name: z.string().min(1).max(64) }))
      .output(Device)
      .handler(({ input, errors }) => {
        const device = state.devices.get(input.deviceId);
        if (!device) throw errors.NOT_FOUND({ data: { deviceId: input.deviceId } });
        device.name = input.name;
        return { ...device };
      }),

    purge: requester
      .errors({
        APPROVAL_REQUIRED: {
          status: 409,
          message: 'Purging devices requires approval',
          data: z.object({ approvalId: z.string() }),
        },
      })
      .meta({ agent: { sideEffect: 'destructive', description: 'Permanently delete devices', requiresApproval: true } })
      .input(PurgeInput)
      .output(z.object({ purged: z.array(z.string()) }))
      .handler(({ input, context, errors }) => {
        // Governed: the purge goes through the `/gateway` gateway's
        // `invoke` under the caller's `x-agent-invocation-id` (or an id of
        // the peer's own, which nobody can resume), so the approval is
        // resumable there (`resumeApproval {invocationId, approvalId}`).
        const invocationId = headerValue(context.headers, 'x-agent-invocation-id') ?? `rpc-${state.ids.execution()}`;
        let outcome;
        try {
          outcome = governed.invoke({ invocationId, capabilityId: 'devices.purge', input, correlationId: invocationId });
        } catch {
          throw new ORPCError('BAD_REQUEST', { message: 'The invocation id is not a valid gateway id' });
        }
        switch (outcome.status) {
          case 'approval-required':
            throw errors.APPROVAL_REQUIRED({ data: { approvalId: outcome.approval.id } });
          case 'completed':
            return outcome.output;
          case 'failed':
            if (outcome.error.code === 'INVOCATION_CONFLICT') {
              throw new ORPCError('CONFLICT', { message: 'The invocation id was already used' });
            }
            if (outcome.error.code === 'INPUT_INVALID') {
              throw new ORPCError('BAD_REQUEST', { message: 'Input validation failed', data: outcome.error.details });
            }
            throw new ORPCError('INTERNAL_SERVER_ERROR');
          default:
            throw new ORPCError('INTERNAL_SERVER_ERROR');
        }
      }),

    stats: requester
      .meta({ agent: { sideEffect: 'read', description: 'Device statistics' } })
      .input(z.object({}).optional())
      .output(
        z.object({
          lastSeen: z.date(),
          bytes: z.bigint(),
          tags: z.set(z.string()),
          counters: z.map(z.string(), z.int()),
        }),
      )
      .handler(() => ({
        lastSeen: new Date(STATS.lastSeen),
        bytes: STATS.bytes,
        tags: new Set(STATS.tags),
        counters: new Map(STATS.counters),
      })),
  };

  const agent = {
    echoInvocation: requester
      .errors({ MISSING_INVOCATION_ID: { status: 400, message: 'Missing x-agent-invocation-id header' } })
      .meta({ agent: { sideEffect: 'read', description: 'Echo the x-agent-invocation-id header' } })
      .input(z.object({}))
      .output(z.object({ invocationId: z.string() }))
      .handler(({ context, errors }) => {
        const invocationId = headerValue(context.headers, 'x-agent-invocation-id');
        if (!invocationId) throw errors.MISSING_INVOCATION_ID();
        return { invocationId };
      }),
  };

  const debug = {
    fail: requester
      .meta({ agent: false })
      .input(z.object({ kind: z.enum(['unauthorized', 'forbidden', 'internal', 'custom', 'custom-no-status', 'output']) }))
      .output(z.object({ ok: z.literal(true) }))
      .handler(({ input }) => {
        switch (input.kind) {
          case 'unauthorized':
            throw new ORPCError('UNAUTHORIZED');
          case 'forbidden':
            throw new ORPCError('FORBIDDEN');
          case 'internal':
            throw new Error('secret db password');
          case 'custom':
            throw new ORPCError('RATE_LIMITED', { status: 429, message: 'Slow down' });
          case 'custom-no-status':
            throw new ORPCError('TEAPOT');
          case 'output':
            return { ok: 'not true' };
        }
        throw new Error(`unreachable kind ${input.kind}`);
      }),
  };

  return { devices, agent, debug };
}

/** The domain router's contracts (for the manifest generator). */
export const domainRouter = createDomainRouter();
