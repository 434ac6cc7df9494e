// Corpus tools → agent manifests (`{ "tools": { "<ns>.<tool>": … } }`), with
// the name mapping and effect rules of tests/fixtures/corpus/README.md.

const PROTOTYPE_SEGMENTS = new Set(['__proto__', 'prototype', 'constructor']);

/**
 * Maps one name to a valid path segment (`[A-Za-z_][A-Za-z0-9_-]*`, not a
 * JavaScript prototype name, not `_`): every other character becomes `_`; a
 * name that then starts with a digit or `-` (or is empty) gets a `t_`
 * prefix; a prototype name or `_` gets a trailing `_`.
 */
export function toSegment(name) {
  let s = String(name).replace(/[^A-Za-z0-9_-]/g, '_');
  if (!/^[A-Za-z_]/.test(s)) s = `t_${s}`;
  if (PROTOTYPE_SEGMENTS.has(s) || s === '_') s = `${s}_`;
  return s;
}

/**
 * A conservative stand-in for the Rust identifier a segment maps to
 * (surface-runtime's `segment_to_ident` snake-cases it): two segments with
 * the same key may map to one identifier, so they are treated as colliding.
 */
function identKey(segment) {
  return segment.replace(/[-_]/g, '').toLowerCase();
}

/**
 * Assigns paths `<ns>.<mapped name segments>` to `tools` (each `{ name }`,
 * where `name` is split on `.` only when `splitDots` is set, as for oRPC
 * router paths). Collisions (after mapping, by `identKey`) get `_2`, `_3`, …
 * on the last segment, in the order of the original names. Returns the
 * paths in the order of `tools`.
 */
export function assignPaths(ns, tools, { splitDots = false } = {}) {
  const nsSeg = toSegment(ns);
  const order = tools.map((t, i) => [t.name, i]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  const used = new Set();
  const paths = new Array(tools.length);
  for (const [name, i] of order) {
    const parts = (splitDots ? String(name).split('.') : [String(name)]).map(toSegment);
    let candidate = [nsSeg, ...parts];
    const key = (p) => p.map(identKey).join('.');
    for (let n = 2; used.has(key(candidate)); n++) {
      candidate = [nsSeg, ...parts.slice(0, -1), `${parts[parts.length - 1]}_${n}`];
    }
    used.add(key(candidate));
    paths[i] = candidate.join('.');
  }
  return paths;
}

/**
 * MCP tool annotations → effect: `readOnlyHint: true` → `server-query`,
 * else `destructiveHint: true` → `destructive`, else `openWorldHint: true`
 * → `external-side-effect`, else `server-mutation`.
 */
export function mcpEffect(annotations) {
  if (annotations?.readOnlyHint === true) return 'server-query';
  if (annotations?.destructiveHint === true) return 'destructive';
  if (annotations?.openWorldHint === true) return 'external-side-effect';
  return 'server-mutation';
}

/** Manifest entry in the field order the Rust model serializes. */
export function manifestTool({ description, inputSchema, outputSchema, effect }) {
  const tool = { description: description ?? '', inputSchema };
  if (outputSchema !== undefined) tool.outputSchema = outputSchema;
  tool.effect = effect;
  return tool;
}

/** Object with keys sorted (top level only). */
export function sortedKeys(obj) {
  return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, obj[k]]));
}

/** Fixture text: 2-space JSON with a final newline. */
export function fixtureText(value) {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Checks a set of paths the way the manifest loader does (JS mirror, conservative). */
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
  const sorted = [...keys.keys()].sort();
  for (let i = 0; i + 1 < sorted.length; i++) {
    if (sorted[i + 1].startsWith(`${sorted[i]}.`)) problems.push(`${keys.get(sorted[i])}: is a prefix of ${keys.get(sorted[i + 1])}`);
  }
  return problems;
}
