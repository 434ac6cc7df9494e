// Builds agent manifests from an oRPC router's agent metadata
// (`meta.agent`), with either JSON Schema converter.

import { z } from 'zod';
import { resolveContractProcedures } from '@orpc/server';
import { ZodToJsonSchemaConverter } from '@orpc/zod/zod4';
import { effectOf, sortedKeys } from './json.mjs';

const orpcConverter = new ZodToJsonSchemaConverter();

/** oRPC's converter (`@orpc/zod/zod4`); `io` is `'input'` or `'output'`. */
export function orpcJsonSchema(schema, io) {
  return orpcConverter.convert(schema, { strategy: io })[1];
}

/** zod's own `z.toJSONSchema(schema, { io })`. */
export function zodJsonSchema(schema, io) {
  return z.toJSONSchema(schema, { io });
}

/**
 * Walks `router` and returns `[{ path, contract, agent }]` for every
 * procedure whose `meta.agent` is an object (procedures with
 * `meta.agent === false` or without agent metadata are skipped), sorted by
 * path.
 */
export async function agentProcedures(router, prefix = []) {
  const found = [];
  await resolveContractProcedures({ router, path: prefix }, ({ contract, path }) => {
    const agent = contract['~orpc'].meta?.agent;
    if (agent && typeof agent === 'object') found.push({ path: path.join('.'), contract, agent });
  });
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The agent manifest `{ tools: { <path>: { description, inputSchema,
 * outputSchema?, effect, requiresApproval? } } }` of `router`. `convert(schema,
 * io)` turns a zod schema into JSON Schema. `outputSchema` comes only from
 * `meta.agent.modelOutput`; `requiresApproval` is written only when true
 * (absent means false, as the Rust model serializes it).
 */
export async function buildManifest(router, convert, prefix = []) {
  const tools = {};
  for (const { path, contract, agent } of await agentProcedures(router, prefix)) {
    if (typeof agent.description !== 'string' || agent.description === '') {
      throw new Error(`${path}: meta.agent.description must be a non-empty string`);
    }
    const tool = {
      description: agent.description,
      inputSchema: convert(contract['~orpc'].inputSchema, 'input'),
    };
    if (agent.modelOutput) tool.outputSchema = convert(agent.modelOutput, 'output');
    tool.effect = effectOf(agent.sideEffect, path);
    if (agent.requiresApproval === true) tool.requiresApproval = true;
    tools[path] = tool;
  }
  return { tools: sortedKeys(tools) };
}

const PROTOTYPE_SEGMENTS = new Set(['__proto__', 'prototype', 'constructor']);

/** Approximate Rust identifier of a segment (for collision checks only). */
function identKey(segment) {
  return segment.replace(/-/g, '_').replace(/_/g, '').toLowerCase();
}

/**
 * The manifest path rules, checked on the generated manifests (a JS mirror of
 * surface-runtime's `validate_paths`): non-empty segments matching
 * `[A-Za-z_][A-Za-z0-9_-]*`, no prototype names, no prefix conflicts, no two
 * paths that differ only in case/`_`/`-` (they could map to one Rust path).
 * Returns a list of problems (empty when valid).
 */
export function pathProblems(paths) {
  const problems = [];
  const keys = new Map();
  for (const path of paths) {
    const segments = path.split('.');
    for (const s of segments) {
      if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(s) || s === '_' || PROTOTYPE_SEGMENTS.has(s)) {
        problems.push(`${path}: unsafe segment ${JSON.stringify(s)}`);
      }
    }
    const key = segments.map(identKey).join('.');
    if (keys.has(key)) problems.push(`${path}: collides with ${keys.get(key)}`);
    keys.set(key, path);
  }
  for (const a of keys.keys()) {
    for (const b of keys.keys()) {
      if (b.startsWith(`${a}.`)) problems.push(`${keys.get(a)}: is a prefix of ${keys.get(b)}`);
    }
  }
  return problems;
}
