// Turns OpenAPI operations into self-contained JSON Schemas.
//
// For an operation with an `application/json` request body, the body's
// schema is taken as written; every `#/components/schemas/X` it reaches
// (transitively) is copied into the schema's own `$defs` under the same name
// and each such `$ref` is rewritten to `#/$defs/X`. Nothing else is changed:
// `nullable`, `discriminator` (its `mapping` values are references too and are
// rewritten the same way), `allOf` with non-object parts, `x-` extensions and
// descriptions stay as the spec has them. When the body schema is exactly one
// `$ref`, the root becomes that component (so the root is the object the
// operation takes); it stays in `$defs` too only when something refers back
// to it.

const COMPONENT_PREFIX = '#/components/schemas/';

function decodePointerToken(token) {
  return decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~');
}

function encodePointerToken(name) {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

function componentName(ref) {
  if (typeof ref !== 'string' || !ref.startsWith(COMPONENT_PREFIX)) return null;
  const rest = ref.slice(COMPONENT_PREFIX.length);
  if (rest.includes('/')) throw new Error(`unsupported reference into a component: ${ref}`);
  return decodePointerToken(rest);
}

/**
 * Copies `value`, rewriting component references, and adds every component
 * name it refers to into `found`. Only `$ref` values and discriminator
 * `mapping` values are references; an object property that happens to be
 * named `$ref` inside `properties` is a property name, not a reference.
 */
function rewrite(value, found) {
  if (Array.isArray(value)) return value.map((v) => rewrite(v, found));
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === '$ref' && typeof v === 'string') {
      const name = componentName(v);
      if (name === null) throw new Error(`unsupported $ref ${v}`);
      found.add(name);
      out[key] = `#/$defs/${encodePointerToken(name)}`;
    } else if (key === 'discriminator' && v && typeof v === 'object' && v.mapping) {
      const mapping = {};
      for (const [tag, target] of Object.entries(v.mapping)) {
        const name = componentName(target);
        if (name === null) {
          mapping[tag] = target;
        } else {
          found.add(name);
          mapping[tag] = `#/$defs/${encodePointerToken(name)}`;
        }
      }
      out[key] = { ...v, mapping };
    } else {
      // `properties`, `patternProperties`, `$defs`/`definitions` map names to
      // schemas: their keys are never keywords.
      const mapOfSchemas = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'].includes(key);
      out[key] = mapOfSchemas ? rewriteMap(v, found) : rewrite(v, found);
    }
  }
  return out;
}

function rewriteMap(map, found) {
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return rewrite(map, found);
  const out = {};
  for (const [k, v] of Object.entries(map)) out[k] = rewrite(v, found);
  return out;
}

/**
 * The self-contained schema for `schema` (an OpenAPI schema object) taken
 * from `spec`; returns `{ schema, rootComponent }`.
 */
export function selfContained(spec, schema) {
  const components = spec.components?.schemas ?? {};
  const rootName = schema && Object.keys(schema).length === 1 ? componentName(schema.$ref) : null;
  const defs = new Map();
  const queue = [];
  const visit = (found) => {
    for (const name of found) {
      if (!defs.has(name) && !queue.includes(name)) queue.push(name);
    }
  };
  const rootFound = new Set();
  const root = rewrite(rootName === null ? schema : components[rootName], rootFound);
  if (rootName !== null && !(rootName in components)) throw new Error(`missing component ${rootName}`);
  visit(rootFound);
  while (queue.length) {
    const name = queue.shift();
    if (!(name in components)) throw new Error(`missing component ${name}`);
    const found = new Set();
    defs.set(name, rewrite(components[name], found));
    visit(found);
  }
  const out = { ...root };
  if (defs.size) {
    if ('$defs' in out) throw new Error('a request body schema with its own $defs is not supported');
    out.$defs = Object.fromEntries([...defs.keys()].sort().map((k) => [k, defs.get(k)]));
  }
  return { schema: out, rootComponent: rootName };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/**
 * Every operation of `spec` with an `application/json` request body, as
 * `{ operationId, method, path, summary, description, schema, rootComponent }`
 * sorted by operationId.
 */
export function jsonBodyOperations(spec) {
  const out = [];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op || !op.operationId) continue;
      let body = op.requestBody;
      if (body?.$ref) {
        const name = body.$ref.replace('#/components/requestBodies/', '');
        body = spec.components?.requestBodies?.[name];
      }
      const media = body?.content?.['application/json'];
      if (!media?.schema) continue;
      const { schema, rootComponent } = selfContained(spec, media.schema);
      out.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        summary: op.summary ?? '',
        description: op.description ?? '',
        schema,
        rootComponent,
      });
    }
  }
  return out.sort((a, b) => (a.operationId < b.operationId ? -1 : a.operationId > b.operationId ? 1 : 0));
}

/** OpenAPI method → agent effect: GET reads, DELETE destroys, anything else mutates. */
export function openapiEffect(method) {
  if (method === 'GET') return 'server-query';
  if (method === 'DELETE') return 'destructive';
  return 'server-mutation';
}
