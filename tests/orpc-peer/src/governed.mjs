// The governed gateway mounted at /gateway (README.md, "Governed
// gateway"): capability descriptors with contract digests, idempotent
// invocation receipts, approvals and resumption, and two test controls.

import { z } from 'zod';
import { ORPCError } from '@orpc/server';
import { approver, headerValue, requester } from './auth.mjs';
import { DisableInput, PurgeInput, disableDevices } from './domain.mjs';
import { contractDigest } from './json.mjs';
import { orpcJsonSchema } from './manifest.mjs';
import { createState } from './state.mjs';

const LocateOutput = z.object({ deviceId: z.string(), room: z.string() });

/**
 * The governed capabilities, sorted by path. `execute(state, input)` returns
 * the outcome `{ status: 'completed', output } | { status: 'failed', error:
 * { code, message } } | { status: 'cancelled' } | { status: 'outcome-unknown' }`.
 * Capabilities with `requiresApproval` run only after approval + resume.
 */
export const CAPABILITIES = Object.freeze([
  {
    path: 'devices.disable',
    description: 'Disable devices',
    effect: 'write',
    requiresApproval: false,
    input: DisableInput,
    execute(state, input) {
      const result = disableDevices(state, input.deviceIds);
      if (result.error === 'NOT_FOUND') {
        return { status: 'failed', error: { code: 'NOT_FOUND', message: `Device ${result.deviceId} not found` } };
      }
      if (result.error === 'FORBIDDEN') {
        return { status: 'failed', error: { code: 'FORBIDDEN', message: `Device ${result.deviceId} is locked` } };
      }
      return { status: 'completed', output: { disabled: result.disabled } };
    },
  },
  {
    path: 'devices.locate',
    description: 'Locate a device',
    effect: 'read',
    requiresApproval: false,
    input: z.object({ deviceId: z.string() }),
    modelOutput: LocateOutput,
    execute(_state, input) {
      switch (input.deviceId) {
        case 'dev-locked':
          return { status: 'failed', error: { code: 'FORBIDDEN', message: 'Not allowed to locate this device' } };
        case 'dev-3':
          return { status: 'failed', error: { code: 'PROVIDER_DOWN', message: 'The location provider is down' } };
        case 'dev-2':
          return { status: 'cancelled' };
        default:
          return { status: 'completed', output: { deviceId: input.deviceId, room: 'Lobby' } };
      }
    },
  },
  {
    path: 'devices.purge',
    description: 'Permanently delete devices',
    effect: 'destructive',
    requiresApproval: true,
    input: PurgeInput,
    execute(state, input) {
      const purged = [];
      for (const id of input.deviceIds) {
        if (state.devices.delete(id)) purged.push(id);
      }
      return { status: 'completed', output: { purged } };
    },
  },
  {
    path: 'mail.send',
    description: 'Send an email',
    effect: 'external',
    requiresApproval: false,
    input: z.object({ to: z.email(), subject: z.string() }),
    execute() {
      return { status: 'outcome-unknown' }; // the mail provider timed out
    },
  },
]);

/** `"<path>@v1"`: the canonical capability id override. */
export function capabilityIdOf(path) {
  return `${path}@v1`;
}

function descriptorOf(cap) {
  const inputSchema = orpcJsonSchema(cap.input, 'input');
  const descriptor = { path: cap.path, description: cap.description, inputSchema };
  if (cap.modelOutput) descriptor.modelOutputSchema = orpcJsonSchema(cap.modelOutput, 'output');
  descriptor.effect = cap.effect;
  descriptor.requiresApproval = cap.requiresApproval;
  descriptor.capabilityId = capabilityIdOf(cap.path);
  descriptor.contractDigest = contractDigest(inputSchema);
  return descriptor;
}

/** The `PortableDescriptor[]` that `capabilities.describe` returns. */
export function describeCapabilities() {
  return CAPABILITIES.map(descriptorOf);
}

const DESCRIPTORS = describeCapabilities();
const BY_ID = new Map(CAPABILITIES.map((cap, i) => [capabilityIdOf(cap.path), { cap, descriptor: DESCRIPTORS[i] }]));

const ids = { invocationId: z.string(), executionId: z.string() };
export const Receipt = z.discriminatedUnion('status', [
  z.object({ status: z.literal('completed'), ...ids, output: z.unknown() }),
  z.object({ status: z.literal('approval-required'), ...ids, approvalId: z.string() }),
  z.object({ status: z.literal('outcome-unknown'), ...ids }),
  z.object({ status: z.literal('failed'), ...ids, error: z.object({ code: z.string(), message: z.string() }) }),
  z.object({ status: z.literal('cancelled'), ...ids }),
]);

const PortableDescriptor = z.object({
  path: z.string(),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  modelOutputSchema: z.record(z.string(), z.unknown()).optional(),
  effect: z.enum(['none', 'read', 'write', 'external', 'destructive']),
  requiresApproval: z.boolean(),
  capabilityId: z.string(),
  contractDigest: z.string(),
});

/** A receipt `{ status, invocationId, executionId, output? | error? }` from an outcome. */
function receiptFrom(invocationId, executionId, outcome) {
  const receipt = { status: outcome.status, invocationId, executionId };
  if (outcome.output !== undefined) receipt.output = outcome.output;
  if (outcome.error) receipt.error = outcome.error;
  return receipt;
}

export function createGatewayRouter(state = createState()) {
  const capabilities = {
    describe: requester
      .input(z.object({}).optional())
      .output(z.array(PortableDescriptor))
      .handler(() => describeCapabilities()),

    invoke: requester
      .errors({
        NOT_FOUND: { status: 404, message: 'Unknown capability', data: z.object({ capabilityId: z.string() }) },
        CONTRACT_MISMATCH: {
          status: 409,
          message: 'The contract digest does not match the current contract',
          data: z.object({ capabilityId: z.string(), contractDigest: z.string() }),
        },
      })
      .input(
        z.object({
          capabilityId: z.string(),
          invocationId: z.string().min(1),
          contractDigest: z.string(),
          input: z.unknown(),
        }),
      )
      .output(Receipt)
      .handler(({ input, context, errors }) => {
        let record = state.invocations.get(input.invocationId);
        if (!record) {
          const entry = BY_ID.get(input.capabilityId);
          if (!entry) throw errors.NOT_FOUND({ data: { capabilityId: input.capabilityId } });
          if (input.contractDigest !== entry.descriptor.contractDigest) {
            throw errors.CONTRACT_MISMATCH({
              data: { capabilityId: input.capabilityId, contractDigest: entry.descriptor.contractDigest },
            });
          }
          const parsed = entry.cap.input.safeParse(input.input);
          if (!parsed.success) {
            throw new ORPCError('BAD_REQUEST', {
              message: 'Input validation failed',
              data: { issues: JSON.parse(JSON.stringify(parsed.error.issues)) },
            });
          }
          const executionId = state.newExecutionId();
          record = { capabilityId: input.capabilityId, input: parsed.data, cap: entry.cap };
          if (entry.cap.requiresApproval) {
            record.approvalId = state.newApproval(input.invocationId);
            record.receipt = {
              status: 'approval-required',
              invocationId: input.invocationId,
              executionId,
              approvalId: record.approvalId,
            };
          } else {
            record.receipt = receiptFrom(input.invocationId, executionId, entry.cap.execute(state, parsed.data));
          }
          state.invocations.set(input.invocationId, record);
        }
        // Test controls (after the effect is committed and the receipt stored).
        if (headerValue(context.headers, 'x-test-drop-response') === '1') {
          context.dropConnection();
          return new Promise(() => {}); // never answer: the socket is gone
        }
        if (headerValue(context.headers, 'x-test-mismatch-invocation') === '1') {
          return { ...record.receipt, invocationId: `other-${record.receipt.invocationId}` };
        }
        return record.receipt;
      }),

    getInvocation: requester
      .errors({ NOT_FOUND: { status: 404, message: 'Unknown invocation', data: z.object({ invocationId: z.string() }) } })
      .input(z.object({ invocationId: z.string() }))
      .output(Receipt)
      .handler(({ input, errors }) => {
        const record = state.invocations.get(input.invocationId);
        if (!record) throw errors.NOT_FOUND({ data: { invocationId: input.invocationId } });
        return record.receipt;
      }),

    resume: requester
      .errors({ NOT_FOUND: { status: 404, message: 'Unknown invocation', data: z.object({ invocationId: z.string() }) } })
      .input(z.object({ invocationId: z.string() }))
      .output(Receipt)
      .handler(({ input, errors }) => {
        const record = state.invocations.get(input.invocationId);
        if (!record) throw errors.NOT_FOUND({ data: { invocationId: input.invocationId } });
        if (record.receipt.status !== 'approval-required') return record.receipt;
        const { invocationId, executionId } = record.receipt;
        const decision = state.approvals.get(record.approvalId).decision;
        if (decision === 'approve') {
          // A purge held by the domain router has no `cap` yet.
          const cap = record.cap ?? BY_ID.get(record.capabilityId).cap;
          record.receipt = receiptFrom(invocationId, executionId, cap.execute(state, record.input));
        } else if (decision === 'reject') {
          record.receipt = receiptFrom(invocationId, executionId, {
            status: 'failed',
            error: { code: 'APPROVAL_REJECTED', message: 'The approval was rejected' },
          });
        }
        return record.receipt;
      }),
  };

  const approvals = {
    /** The approval and what it would run: the effective input the server holds. */
    get: approver
      .errors({ NOT_FOUND: { status: 404, message: 'Unknown approval', data: z.object({ approvalId: z.string() }) } })
      .input(z.object({ approvalId: z.string() }))
      .output(
        z.object({
          approvalId: z.string(),
          decision: z.enum(['pending', 'approve', 'reject']),
          invocationId: z.string().nullable(),
          capabilityId: z.string().nullable(),
          input: z.unknown(),
        }),
      )
      .handler(({ input, errors }) => {
        const approval = state.approvals.get(input.approvalId);
        if (!approval) throw errors.NOT_FOUND({ data: { approvalId: input.approvalId } });
        const record = approval.invocationId ? state.invocations.get(approval.invocationId) : undefined;
        return {
          approvalId: approval.approvalId,
          decision: approval.decision,
          invocationId: approval.invocationId ?? null,
          capabilityId: record?.capabilityId ?? null,
          input: record?.input ?? null,
        };
      }),
    decide: approver
      .errors({ NOT_FOUND: { status: 404, message: 'Unknown approval', data: z.object({ approvalId: z.string() }) } })
      .input(z.object({ approvalId: z.string(), decision: z.enum(['approve', 'reject']) }))
      .output(z.object({ approvalId: z.string(), decision: z.enum(['approve', 'reject']) }))
      .handler(({ input, errors }) => {
        const approval = state.approvals.get(input.approvalId);
        if (!approval) throw errors.NOT_FOUND({ data: { approvalId: input.approvalId } });
        if (approval.decision === 'pending') approval.decision = input.decision;
        return { approvalId: approval.approvalId, decision: approval.decision };
      }),
  };

  return { capabilities, approvals };
}
