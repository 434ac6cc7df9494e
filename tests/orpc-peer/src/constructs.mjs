// Construct-coverage contracts: one oRPC procedure per zod construct that the
// Rust JSON Schema → Rust type generator must handle (README.md,
// "Constructs to cover"). Each procedure echoes its (parsed) input, so the
// server can also serve them as round-trip targets at /rpc/constructs/<name>.
//
// `constructs` is the single source: generate.mjs converts every schema with
// the oRPC converter and with zod's own z.toJSONSchema, and checks every
// sample with zod's parse and with Ajv (JSON Schema 2020-12) against both
// emitted schemas.
//
// Samples are plain JSON (no Date/BigInt): they are instances of the JSON
// Schemas. Output samples are what zod's *output* accepts (defaults filled in).

import { z } from 'zod';
import { os } from '@orpc/server';

const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 9007199254740991
const MIN_SAFE = Number.MIN_SAFE_INTEGER; // -9007199254740991

// Recursive type declared with a getter (zod 4's recommended form).
const TreeNode = z.object({
  name: z.string(),
  get children() {
    return z.array(TreeNode).optional();
  },
});

// Recursive type declared with z.lazy.
const Category = z.lazy(() =>
  z.object({
    label: z.string(),
    parent: Category.nullable(),
  }),
);

function sameInOut(schema) {
  return { input: schema, output: schema };
}

/**
 * One entry per construct: `name` is the last path segment (the procedure is
 * `constructs.<name>`), `input`/`output` are zod schemas (`output` may be
 * absent when the construct has no meaningful output), `samples.input` and
 * `samples.output` are JSON instances valid for the respective schema.
 */
export const constructs = [
  {
    name: 'requiredOptional',
    description: 'Object with required and optional properties',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        name: z.string(),
        count: z.int(),
        note: z.string().optional(),
        tags: z.array(z.string()).optional(),
      }),
    ),
    samples: {
      input: [
        { name: 'a', count: 0 },
        { name: 'b', count: 3, note: 'hello' },
        { name: 'c', count: -1, note: '', tags: ['x', 'y'] },
        { name: 'd', count: 1, tags: [] },
      ],
      output: [
        { name: 'a', count: 0 },
        { name: 'c', count: -1, note: '', tags: ['x', 'y'] },
      ],
    },
  },
  {
    name: 'optionalNullable',
    description: 'optional vs nullable vs optional-nullable (nullish) properties',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        optional: z.string().optional(),
        nullable: z.string().nullable(),
        nullish: z.string().nullish(),
      }),
    ),
    samples: {
      input: [
        { nullable: null },
        { nullable: 'n' },
        { optional: 'o', nullable: null, nullish: null },
        { optional: 'o', nullable: 'n', nullish: 'x' },
        { nullable: null, nullish: 'x' },
      ],
      output: [
        { nullable: null },
        { optional: 'o', nullable: 'n', nullish: null },
        { nullable: 'n', nullish: 'x' },
      ],
    },
  },
  {
    name: 'strictObject',
    description: 'Strict object: no additional properties',
    sideEffect: 'write',
    ...sameInOut(
      z.strictObject({
        id: z.string(),
        enabled: z.boolean().optional(),
      }),
    ),
    samples: {
      input: [{ id: 'a' }, { id: 'b', enabled: false }],
      output: [{ id: 'a', enabled: true }],
    },
  },
  {
    name: 'record',
    description: 'Records (string keys to values)',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        counts: z.record(z.string(), z.int()),
        labels: z.record(z.string(), z.object({ text: z.string() })).optional(),
      }),
    ),
    samples: {
      input: [
        { counts: {} },
        { counts: { a: 1, b: MAX_SAFE } },
        { counts: { x: -2 }, labels: { first: { text: 'one' } } },
      ],
      output: [{ counts: {} }, { counts: { a: 1 }, labels: {} }],
    },
  },
  {
    name: 'stringEnum',
    description: 'String enum',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        color: z.enum(['red', 'green', 'blue']),
        status: z.enum(['active', 'disabled']).optional(),
      }),
    ),
    samples: {
      input: [{ color: 'red' }, { color: 'green', status: 'active' }, { color: 'blue', status: 'disabled' }],
      output: [{ color: 'blue' }],
    },
  },
  {
    name: 'literals',
    description: 'Literal (const) string, number and boolean',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        kind: z.literal('fixed'),
        version: z.literal(2),
        enabled: z.literal(true),
      }),
    ),
    samples: {
      input: [{ kind: 'fixed', version: 2, enabled: true }],
      output: [{ kind: 'fixed', version: 2, enabled: true }],
    },
  },
  {
    name: 'unionObjects',
    description: 'Union of objects (anyOf)',
    sideEffect: 'external',
    ...sameInOut(
      z.object({
        recipient: z.union([
          z.object({ email: z.string() }),
          z.object({ phone: z.string(), country: z.string().optional() }),
        ]),
      }),
    ),
    samples: {
      input: [
        { recipient: { email: 'a@example.com' } },
        { recipient: { phone: '+3312345678' } },
        { recipient: { phone: '12345', country: 'FR' } },
      ],
      output: [{ recipient: { email: 'a@example.com' } }, { recipient: { phone: '12345', country: 'FR' } }],
    },
  },
  {
    name: 'discriminatedUnion',
    description: 'Discriminated union on `kind` (oneOf in zod, anyOf in oRPC)',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        shape: z.discriminatedUnion('kind', [
          z.object({ kind: z.literal('circle'), radius: z.number() }),
          z.object({ kind: z.literal('rect'), width: z.number(), height: z.number() }),
          z.object({ kind: z.literal('point') }),
        ]),
      }),
    ),
    samples: {
      input: [
        { shape: { kind: 'circle', radius: 1.5 } },
        { shape: { kind: 'rect', width: 2, height: 3 } },
        { shape: { kind: 'point' } },
      ],
      output: [
        { shape: { kind: 'circle', radius: 0 } },
        { shape: { kind: 'rect', width: 0.5, height: 10 } },
        { shape: { kind: 'point' } },
      ],
    },
  },
  {
    name: 'unionPrimitives',
    description: 'Union of primitives (string | number | boolean | null)',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        value: z.union([z.string(), z.number(), z.boolean(), z.null()]),
      }),
    ),
    samples: {
      input: [{ value: 'text' }, { value: 1.25 }, { value: -3 }, { value: false }, { value: null }],
      output: [{ value: 'text' }, { value: 7 }, { value: true }, { value: null }],
    },
  },
  {
    name: 'tuple',
    description: 'Fixed tuple (prefixItems)',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        point: z.tuple([z.number(), z.number()]),
        labelled: z.tuple([z.string(), z.int(), z.boolean()]).optional(),
      }),
    ),
    samples: {
      input: [{ point: [0, 0] }, { point: [1.5, -2], labelled: ['a', 1, true] }],
      output: [{ point: [3, 4], labelled: ['b', MIN_SAFE, false] }],
    },
  },
  {
    name: 'tupleRest',
    description: 'Tuple with a rest element',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        row: z.tuple([z.string()], z.int()),
      }),
    ),
    samples: {
      input: [{ row: ['head'] }, { row: ['head', 1] }, { row: ['head', 1, 2, MAX_SAFE] }],
      output: [{ row: ['head'] }, { row: ['head', -1, 0] }],
    },
  },
  {
    name: 'arrayOfObjects',
    description: 'Array of objects',
    sideEffect: 'write',
    ...sameInOut(
      z.object({
        items: z.array(z.object({ sku: z.string(), quantity: z.int().min(1), note: z.string().optional() })),
      }),
    ),
    samples: {
      input: [{ items: [] }, { items: [{ sku: 'A-1', quantity: 1 }, { sku: 'B-2', quantity: 5, note: 'fragile' }] }],
      output: [{ items: [{ sku: 'A-1', quantity: 2 }] }],
    },
  },
  {
    name: 'scalars',
    description: 'z.int() (±2^53-1 bounds), z.number(), boolean and z.null()',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        integer: z.int(),
        number: z.number(),
        flag: z.boolean(),
        nothing: z.null(),
      }),
    ),
    samples: {
      input: [
        { integer: 0, number: 0, flag: false, nothing: null },
        { integer: MAX_SAFE, number: 1.5, flag: true, nothing: null },
        { integer: MIN_SAFE, number: -1e-7, flag: false, nothing: null },
        { integer: 42, number: 1e21, flag: true, nothing: null },
      ],
      output: [
        { integer: MAX_SAFE, number: 3.25, flag: true, nothing: null },
        { integer: MIN_SAFE, number: -2, flag: false, nothing: null },
      ],
    },
  },
  {
    name: 'recursiveGetter',
    description: 'Recursive type declared with a getter ($defs/$ref in zod)',
    sideEffect: 'read',
    ...sameInOut(z.object({ root: TreeNode })),
    samples: {
      input: [
        { root: { name: 'leaf' } },
        { root: { name: 'a', children: [] } },
        {
          root: {
            name: 'level1',
            children: [
              { name: 'level2a', children: [{ name: 'level3', children: [{ name: 'level4' }] }] },
              { name: 'level2b' },
            ],
          },
        },
      ],
      output: [
        { root: { name: 'leaf' } },
        { root: { name: 'level1', children: [{ name: 'level2', children: [{ name: 'level3', children: [] }] }] } },
      ],
    },
  },
  {
    name: 'recursiveLazy',
    description: 'Recursive type declared with z.lazy ($defs/$ref in zod)',
    sideEffect: 'read',
    ...sameInOut(z.object({ category: Category })),
    samples: {
      input: [
        { category: { label: 'root', parent: null } },
        {
          category: {
            label: 'level1',
            parent: { label: 'level2', parent: { label: 'level3', parent: { label: 'level4', parent: null } } },
          },
        },
      ],
      output: [{ category: { label: 'a', parent: { label: 'b', parent: { label: 'c', parent: null } } } }],
    },
  },
  {
    name: 'defaults',
    description: 'Properties with .default(...): optional in input, required in output',
    sideEffect: 'read',
    ...sameInOut(
      z.object({
        page: z.int().min(1).default(1),
        order: z.enum(['asc', 'desc']).default('asc'),
        includeArchived: z.boolean().default(false),
        query: z.string().optional(),
      }),
    ),
    samples: {
      input: [{}, { page: 2 }, { page: 3, order: 'desc', includeArchived: true, query: 'q' }],
      output: [
        { page: 1, order: 'asc', includeArchived: false },
        { page: 2, order: 'desc', includeArchived: true, query: 'q' },
      ],
    },
  },
  {
    name: 'formats',
    description: 'String formats: uuid, ISO date-time, email',
    sideEffect: 'external',
    ...sameInOut(
      z.object({
        id: z.uuid(),
        at: z.iso.datetime(),
        email: z.email(),
        replyTo: z.email().optional(),
      }),
    ),
    samples: {
      input: [
        { id: '123e4567-e89b-42d3-a456-426614174000', at: '2026-11-29T19:00:00Z', email: 'a@example.com' },
        {
          id: '9b2f6a34-1c3d-4e5f-8a7b-0c1d2e3f4a5b',
          at: '2026-01-01T00:00:00.123Z',
          email: 'first.last@example.org',
          replyTo: 'noreply@example.net',
        },
      ],
      output: [{ id: '123e4567-e89b-42d3-a456-426614174000', at: '2026-11-29T19:00:00Z', email: 'a@example.com' }],
    },
  },
  {
    name: 'described',
    description: 'Descriptions via .describe() on types and properties',
    sideEffect: 'read',
    ...sameInOut(
      z
        .object({
          query: z.string().describe('Full-text search query'),
          limit: z.int().min(1).max(100).optional().describe('Maximum number of hits'),
          filter: z
            .object({ field: z.string().describe('Field name'), value: z.string() })
            .optional()
            .describe('Optional exact-match filter'),
        })
        .describe('Search parameters'),
    ),
    samples: {
      input: [{ query: 'lobby' }, { query: 'x', limit: 100, filter: { field: 'status', value: 'active' } }],
      output: [{ query: 'lobby', limit: 1 }],
    },
  },
  {
    name: 'nested',
    description: 'Objects nested three levels deep',
    sideEffect: 'destructive',
    requiresApproval: true,
    ...sameInOut(
      z.object({
        site: z.object({
          name: z.string(),
          building: z.object({
            floor: z.int(),
            room: z.object({ code: z.string(), capacity: z.int().optional() }),
          }),
        }),
      }),
    ),
    samples: {
      input: [
        { site: { name: 'HQ', building: { floor: 0, room: { code: 'R1' } } } },
        { site: { name: 'HQ', building: { floor: -2, room: { code: 'B2', capacity: 12 } } } },
      ],
      output: [{ site: { name: 'HQ', building: { floor: 3, room: { code: 'R3', capacity: 4 } } } }],
    },
  },
];

/**
 * The oRPC router of the constructs: each procedure echoes its parsed input
 * (so its output is the zod output of the input). `base` is the builder to
 * start from (the server passes its authenticated requester builder).
 */
export function constructsRouter(base = os) {
  const router = {};
  for (const c of constructs) {
    let builder = base
      .meta({
        agent: {
          sideEffect: c.sideEffect,
          description: c.description,
          ...(c.requiresApproval ? { requiresApproval: true } : {}),
          ...(c.output ? { modelOutput: c.output } : {}),
        },
      })
      .input(c.input);
    if (c.output) builder = builder.output(c.output);
    router[c.name] = builder.handler(({ input }) => input);
  }
  return router;
}
