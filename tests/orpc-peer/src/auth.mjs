// Bearer-token auth for the routers and the decision endpoint (README.md,
// "Auth").
//
// The initial context is `{ headers, dropConnection }`: `headers` are the
// node request headers (lower-case names), `dropConnection()` destroys the
// request's socket (used by the x-test-drop-response control).

import { os, ORPCError } from '@orpc/server';

export const USER_TOKEN = 'user-token';
export const APPROVER_TOKEN = 'approver-token';

/** The bearer token of the request, or null. */
export function bearerToken(headers) {
  const value = headers?.authorization;
  if (typeof value !== 'string') return null;
  const m = /^Bearer (.+)$/.exec(value.trim());
  return m ? m[1] : null;
}

/** A single header value (first one if repeated), or undefined. */
export function headerValue(headers, name) {
  const value = headers?.[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Base builder for the server's initial context. */
export const base = os.$context();

/**
 * Requester procedures: `authorization: Bearer user-token` required, any
 * other (or no) token ⇒ `UNAUTHORIZED` (401). Runs before input validation.
 */
export const requester = base.use(({ context, next }) => {
  if (bearerToken(context.headers) !== USER_TOKEN) throw new ORPCError('UNAUTHORIZED');
  return next();
});
