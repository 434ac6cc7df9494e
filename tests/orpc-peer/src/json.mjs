// JSON helpers shared by the generator and the server: fixture formatting,
// canonical JSON and SHA-256 hex digests.

import { createHash } from 'node:crypto';

/** Fixture text: 2-space indentation and a trailing newline. */
export function fixtureText(value) {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Canonical JSON: object keys sorted by UTF-16 code units (JS default sort,
 * identical to byte order for the ASCII keys used here), no whitespace,
 * numbers and strings as JSON.stringify writes them. Arrays keep their order.
 */
export function canonicalJson(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

/** Lowercase hex SHA-256 of `text` (UTF-8), no prefix. */
export function sha256Hex(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Agent-manifest effect names from orpc-agent's `sideEffect`. */
export const EFFECT_BY_SIDE_EFFECT = Object.freeze({
  read: 'server-query',
  write: 'server-mutation',
  external: 'external-side-effect',
  destructive: 'destructive',
});

/** Maps a `meta.agent.sideEffect` to an agent-manifest effect; throws on anything else. */
export function effectOf(sideEffect, path) {
  const effect = EFFECT_BY_SIDE_EFFECT[sideEffect];
  if (!effect) throw new Error(`${path}: unknown meta.agent.sideEffect ${JSON.stringify(sideEffect)}`);
  return effect;
}

/** Returns a copy of `obj` with its own keys sorted (one level). */
export function sortedKeys(obj) {
  return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, obj[k]]));
}
