// A governed capability gateway (README.md, "Governed gateways"), written
// here from the recorded wire facts of orpc-agent's gateway: a flat oRPC
// router of five procedures — describe, invoke, getInvocation, getApproval,
// resumeApproval — with strict request schemas, an idempotent journal,
// approvals with expiry and contract digests bound to a revision.
//
// `createGateway({ name, capabilities, devices, ... })` returns
// `{ router, invoke, decide, approval, setRevision, ... }`: `router` is
// mounted by server.mjs under a prefix of its own; `invoke` is the same
// dispatch for in-process callers (the domain router's governed purge);
// `decide` is what the application's decision endpoint calls.

import { z } from 'zod';
import { ORPCError } from '@orpc/server';
import { headerValue, requester } from './auth.mjs';
import { canonicalJson, sha256Hex } from './json.mjs';

/** The exposure surface the gateway serves. */
export const EXPOSE = 'aiSdk';
/** Longest id (invocation, approval, capability, correlation) a request may carry. */
export const MAX_ID_CHARS = 256;
/** Default approval lifetime, in milliseconds (15 minutes). */
export const DEFAULT_APPROVAL_TTL_MS = 15 * 60 * 1000;

const Id = z.string().min(1).max(MAX_ID_CHARS);
const DescribeRequest = z.strictObject({
  scope: z.strictObject({ tags: z.array(z.string()).optional(), ids: z.array(Id).optional() }).optional(),
});
const InvokeRequest = z.strictObject({
  invocationId: Id,
  capabilityId: Id,
  input: z.unknown(),
  correlationId: Id.optional(),
  contractDigest: z.string().max(MAX_ID_CHARS).optional(),
});
const GetInvocationRequest = z.strictObject({ invocationId: Id });
const GetApprovalRequest = z.strictObject({ approvalId: Id });
const ResumeRequest = z.strictObject({
  invocationId: Id,
  approvalId: Id,
  correlationId: Id.optional(),
  contractDigest: z.string().max(MAX_ID_CHARS).optional(),
});

/** The gateway's answer to a request that breaks its schema (400, as recorded). */
function invalidRequest() {
  return new ORPCError('BAD_REQUEST', {
    message: 'Input validation failed',
    data: { issues: [{ message: 'Invalid capability gateway request' }] },
  });
}

/** Parses `value` with `schema` or throws the recorded 400. */
function strict(schema, value) {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidRequest();
  return parsed.data;
}

/** A refusal before execution: `failed` with `executionId: ""`. */
function refusal(invocationId, code, message) {
  return { status: 'failed', invocationId, executionId: '', error: { code, message, retryable: false } };
}

const NOT_FOUND_MESSAGE = 'Capability not found.';

/** The descriptor of one capability (without its digest). */
function describeOne(cap) {
  const descriptor = {
    version: 1,
    id: cap.id,
    path: cap.id.split('.'),
    description: cap.description,
    inputSchema: z.toJSONSchema(cap.input),
    sideEffect: cap.sideEffect,
    risk: cap.risk,
    tags: cap.tags,
    discovery: 'discoverable',
  };
  if (cap.approval) descriptor.requiresApproval = true;
  const toolName = cap.id.replaceAll('.', '_');
  descriptor.toolNames = { aiSdk: toolName, mcp: toolName };
  return descriptor;
}

/** Policies that apply to `cap`, by name (part of its contract digest). */
function policiesOf(cap) {
  return cap.approval ? [`requireApproval:${cap.approval.types.join(',')}`] : [];
}

/**
 * A gateway over `capabilities` (`[{ id, description, input (zod, strict),
 * sideEffect, risk, tags, approval?: { types }, run(input, ctx) }]`).
 * `run` returns the output, or throws `{ gatewayFailure: { code, message,
 * retryable } }` (a failed outcome), `{ cancelled: true }` (cancelled) or
 * `{ afterEffect: true }` (the effect happened, the outcome is unknown).
 * `ids` is the peer's shared id source (`{ approval(), execution() }`).
 */
export function createGateway({ name, capabilities, ids, approvalTtlMs = DEFAULT_APPROVAL_TTL_MS, revision = 'peer-rev-1' }) {
  const byId = new Map(capabilities.map((cap) => [cap.id, cap]));
  const journal = new Map(); // invocationId → entry
  const approvals = new Map(); // approvalId → record
  const effects = [];
  let current = revision;

  const digestOf = (cap) =>
    sha256Hex(canonicalJson({ descriptor: describeOne(cap), revision: current, expose: EXPOSE, policies: policiesOf(cap) }));
  const descriptorOf = (cap) => ({ ...describeOne(cap), contractDigest: digestOf(cap) });
  const now = () => new Date().toISOString();

  /** The approval as the wire shows it (`expired` once past its expiry). */
  function approvalView(record) {
    if (record.status === 'pending' && Date.now() > Date.parse(record.expiresAt)) record.status = 'expired';
    const { id, capabilityId, status, reasons, types, requestedAt, expiresAt } = record;
    return { id, capabilityId, status, reasons: [...reasons], types: [...types], requestedAt, expiresAt };
  }

  /** The entry's outcome as the wire shows it (its approval's current view). */
  function outcomeOf(entry) {
    if (entry.state === 'pending') return { status: 'outcome-unknown', invocationId: entry.invocationId };
    if (entry.outcome.status === 'approval-required') {
      return { ...entry.outcome, approval: approvalView(approvals.get(entry.approvalId)) };
    }
    return entry.outcome;
  }

  function settle(entry, outcome) {
    entry.state = 'settled';
    entry.outcome = outcome;
    entry.updatedAt = now();
    return outcomeOf(entry);
  }

  /** Runs the handler once; returns the outcome (and settles or leaves pending). */
  function execute(entry, cap, executionId) {
    const ctx = { correlationId: entry.correlationId, approvalId: entry.approvalId };
    try {
      const output = cap.run(entry.input, ctx);
      effects.push({ capabilityId: cap.id, input: entry.input, executionId });
      return settle(entry, { status: 'completed', invocationId: entry.invocationId, executionId, output });
    } catch (thrown) {
      if (thrown?.afterEffect) {
        effects.push({ capabilityId: cap.id, input: entry.input, executionId });
        entry.updatedAt = now();
        return outcomeOf(entry); // stays pending: outcome-unknown
      }
      const status = thrown?.cancelled ? 'cancelled' : 'failed';
      const error = thrown?.gatewayFailure ?? {
        code: thrown?.cancelled ? 'CANCELLED' : 'INTERNAL_ERROR',
        message: thrown?.cancelled ? 'The operation was cancelled.' : 'The operation failed.',
        retryable: false,
      };
      return settle(entry, { status, invocationId: entry.invocationId, executionId, error });
    }
  }

  function requestApproval(entry, cap, executionId) {
    const requestedAt = new Date();
    const approvalId = ids.approval();
    approvals.set(approvalId, {
      id: approvalId,
      capabilityId: cap.id,
      status: 'pending',
      reasons: [`Approval is required for ${cap.id}.`],
      types: [...cap.approval.types],
      requestedAt: requestedAt.toISOString(),
      expiresAt: new Date(requestedAt.getTime() + approvalTtlMs).toISOString(),
      contractDigest: entry.contractDigest,
      invocationId: entry.invocationId,
    });
    entry.approvalId = approvalId;
    return settle(entry, { status: 'approval-required', invocationId: entry.invocationId, executionId });
  }

  /** `invoke` for a validated request: the journal, then the capability. */
  function invoke(request) {
    const { invocationId, capabilityId, input, correlationId, contractDigest } = request;
    const known = journal.get(invocationId);
    if (known) {
      const same = known.capabilityId === capabilityId && known.requestKey === canonicalJson(input ?? null);
      if (!same) return refusal(invocationId, 'INVOCATION_CONFLICT', 'Invocation ID was already used for different input or capability.');
      return outcomeOf(known);
    }
    const cap = byId.get(capabilityId);
    if (!cap) return refusal(invocationId, 'CAPABILITY_NOT_FOUND', NOT_FOUND_MESSAGE);
    const digest = digestOf(cap);
    if (contractDigest !== undefined && contractDigest !== digest) {
      return refusal(invocationId, 'CONTRACT_MISMATCH', 'Capability contract changed. Refresh discovery.');
    }
    const at = now();
    const entry = {
      invocationId,
      capabilityId,
      input: input ?? null,
      requestKey: canonicalJson(input ?? null),
      contractDigest: digest,
      state: 'pending',
      createdAt: at,
      updatedAt: at,
    };
    if (correlationId !== undefined) entry.correlationId = correlationId;
    journal.set(invocationId, entry);
    const executionId = ids.execution();
    const parsed = cap.input.safeParse(input);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path, message: i.message }));
      const error = { code: 'INPUT_INVALID', message: 'Input validation failed.', retryable: false, details: { issues } };
      return settle(entry, { status: 'failed', invocationId, executionId, error });
    }
    entry.input = parsed.data;
    return cap.approval ? requestApproval(entry, cap, executionId) : execute(entry, cap, executionId);
  }

  /** `resumeApproval` for a validated request. */
  function resume({ invocationId, approvalId, contractDigest }) {
    const entry = journal.get(invocationId);
    const record = approvals.get(approvalId);
    if (!entry || !record || entry.approvalId !== approvalId) {
      return refusal(invocationId, 'CAPABILITY_NOT_FOUND', NOT_FOUND_MESSAGE);
    }
    if (entry.state !== 'settled' || entry.outcome.status !== 'approval-required') return outcomeOf(entry);
    const status = approvalView(record).status;
    if (status === 'pending') return outcomeOf(entry);
    const cap = byId.get(entry.capabilityId);
    if (status === 'approved' && (record.contractDigest !== digestOf(cap) || (contractDigest !== undefined && contractDigest !== digestOf(cap)))) {
      return refusal(invocationId, 'CONTRACT_MISMATCH', 'Approval contract changed. A new approval is required.');
    }
    const executionId = ids.execution();
    if (status === 'approved') {
      record.status = 'consumed';
      return execute(entry, cap, executionId);
    }
    const failures = {
      rejected: ['APPROVAL_REJECTED', 'The approval was rejected.'],
      expired: ['APPROVAL_EXPIRED', 'The approval has expired; a new request is required.'],
      cancelled: ['CANCELLED', 'The approval was cancelled.'],
      consumed: ['APPROVAL_CONSUMED', 'The approval was already used.'],
    };
    const [code, message] = failures[status];
    return settle(entry, { status: 'failed', invocationId, executionId, error: { code, message, retryable: false } });
  }

  /** The receipt of an invocation, or null. */
  function receipt(invocationId) {
    const entry = journal.get(invocationId);
    if (!entry) return null;
    const r = { invocationId, capabilityId: entry.capabilityId, contractDigest: entry.contractDigest };
    if (entry.correlationId !== undefined) r.correlationId = entry.correlationId;
    Object.assign(r, { state: entry.state, createdAt: entry.createdAt, updatedAt: entry.updatedAt });
    if (entry.approvalId !== undefined) r.approvalId = entry.approvalId;
    if (entry.state === 'settled') r.outcome = outcomeOf(entry);
    return r;
  }

  /**
   * The application's decision (`decide(id, { status, approver, comment })`):
   * `{ approval }` with its `decision`, `{ notFound: true }` or
   * `{ notPending: approval }` (decided, expired or consumed already).
   */
  function decide(approvalId, { status, approver, comment }) {
    const record = approvals.get(approvalId);
    if (!record) return { notFound: true };
    if (approvalView(record).status !== 'pending') return { notPending: decidedView(record) };
    record.status = status;
    record.decision = { status, approver, decidedAt: now() };
    if (comment !== undefined) record.decision.comment = comment;
    return { approval: decidedView(record) };
  }

  function decidedView(record) {
    const view = approvalView(record);
    if (record.decision) view.decision = structuredClone(record.decision);
    return view;
  }

  const router = buildRouter({ byId, descriptorOf, invoke, resume, receipt, approvals, approvalView });
  return {
    name,
    router,
    invoke: (request) => invoke(strict(InvokeRequest, request)),
    decide,
    hasApproval: (id) => approvals.has(id),
    approval: (id) => (approvals.has(id) ? decidedView(approvals.get(id)) : null),
    receipt,
    describe: () => capabilities.map(descriptorOf),
    setRevision(next) {
      current = next;
    },
    revision: () => current,
    effects: () => structuredClone(effects),
  };
}

/** The five procedures, with the peer's test controls on `invoke`. */
function buildRouter({ byId, descriptorOf, invoke, resume, receipt, approvals, approvalView }) {
  return {
    describe: requester.input(z.unknown()).handler(({ input }) => {
      const { scope } = strict(DescribeRequest, input ?? {});
      return [...byId.values()]
        .filter((cap) => !scope?.ids || scope.ids.includes(cap.id))
        .filter((cap) => !scope?.tags || scope.tags.some((t) => cap.tags.includes(t)))
        .map(descriptorOf);
    }),
    invoke: requester.input(z.unknown()).handler(({ input, context }) => {
      const outcome = invoke(strict(InvokeRequest, input));
      // Test controls, after the journal recorded the call.
      if (headerValue(context.headers, 'x-test-drop-response') === '1') {
        context.dropConnection();
        return new Promise(() => {}); // never answers: the socket is gone
      }
      if (headerValue(context.headers, 'x-test-mismatch-invocation') === '1') {
        return { ...outcome, invocationId: `other-${outcome.invocationId}` };
      }
      return outcome;
    }),
    getInvocation: requester.input(z.unknown()).handler(({ input }) => receipt(strict(GetInvocationRequest, input).invocationId)),
    getApproval: requester.input(z.unknown()).handler(({ input }) => {
      const record = approvals.get(strict(GetApprovalRequest, input).approvalId);
      return record ? approvalView(record) : null;
    }),
    resumeApproval: requester.input(z.unknown()).handler(({ input }) => resume(strict(ResumeRequest, input))),
  };
}
