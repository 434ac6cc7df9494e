// The application's approval decision endpoint (README.md, "Approval
// decisions"): `POST /approvals/decide {approvalId, status:
// "approved"|"rejected", comment?}`, plain JSON (not oRPC), with the
// approver's bearer token. Decisions are not part of the gateway: this is
// the application calling its approval coordinator.

import { z } from 'zod';
import { APPROVER_TOKEN, USER_TOKEN, bearerToken } from './auth.mjs';
import { MAX_ID_CHARS } from './gateway.mjs';
import { readJsonBody, sendJson } from './http.mjs';

/** Longest decision comment, in characters. */
export const MAX_COMMENT_CHARS = 1000;

/** The approver the approver token stands for. */
export const APPROVER = Object.freeze({ id: 'approver-1', kind: 'user' });

const DecideRequest = z.strictObject({
  approvalId: z.string().min(1).max(MAX_ID_CHARS),
  status: z.enum(['approved', 'rejected']),
  comment: z.string().max(MAX_COMMENT_CHARS).optional(),
});

/**
 * Handles one decision over `gateways` (the one holding the approval
 * decides): 200 the decided approval with its `decision`; 401 without the
 * approver token, 403 with the requester's; 400 for a body that breaks the
 * schema; 404 for an unknown approval; 409 `{error, approval}` when it is
 * no longer pending (decided, expired or consumed: the first decision stands).
 */
export async function handleDecide(req, res, gateways) {
  const token = bearerToken(req.headers);
  if (token === USER_TOKEN) return sendJson(res, 403, { error: 'only the approver may decide approvals' });
  if (token !== APPROVER_TOKEN) return sendJson(res, 401, { error: 'unauthorized' });
  const parsed = DecideRequest.safeParse(await readJsonBody(req));
  if (!parsed.success) return sendJson(res, 400, { error: 'expected {approvalId, status: "approved"|"rejected", comment?}' });
  const { approvalId, status, comment } = parsed.data;
  const gateway = gateways.find((g) => g.hasApproval(approvalId));
  if (!gateway) return sendJson(res, 404, { error: 'no such approval' });
  const decided = gateway.decide(approvalId, { status, approver: { ...APPROVER }, comment });
  if (decided.notPending) return sendJson(res, 409, { error: 'the approval is not pending', approval: decided.notPending });
  return sendJson(res, 200, decided.approval);
}
