// Schema-feature statistics: for each feature, how many tools use it
// anywhere in their input or output schema.

const MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_KEYWORDS = ['additionalProperties', 'items', 'contains', 'not', 'if', 'then', 'else', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'];
const ARRAY_KEYWORDS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];

/** Calls `visit(node, isRoot)` for every subschema of `schema`. */
export function walkSchema(schema, visit, isRoot = true) {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  visit(schema, isRoot);
  for (const k of MAP_KEYWORDS) {
    const m = schema[k];
    if (m && typeof m === 'object' && !Array.isArray(m)) for (const v of Object.values(m)) walkSchema(v, visit, false);
  }
  for (const k of SCHEMA_KEYWORDS) {
    const v = schema[k];
    if (Array.isArray(v)) v.forEach((s) => walkSchema(s, visit, false));
    else walkSchema(v, visit, false);
  }
  for (const k of ARRAY_KEYWORDS) if (Array.isArray(schema[k])) schema[k].forEach((s) => walkSchema(s, visit, false));
}

function features(schema) {
  const f = new Set();
  if (schema === undefined) return f;
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : null;
  if (dialect === null) f.add('$schema: none');
  else if (dialect.includes('draft-07')) f.add('$schema: draft-07');
  else if (dialect.includes('2020-12')) f.add('$schema: 2020-12');
  else f.add(`$schema: ${dialect}`);
  walkSchema(schema, (n, isRoot) => {
    if (n !== schema && '$schema' in n) f.add('$schema below the root');
    if ('$ref' in n) f.add('$ref');
    if ('$ref' in n && Object.keys(n).some((k) => !['$ref', 'description', 'title'].includes(k))) f.add('$ref with sibling keywords');
    if ('$ref' in n && n.nullable === true) f.add('$ref with nullable sibling');
    if ('$defs' in n) f.add('$defs');
    if ('definitions' in n) f.add('definitions');
    if ('anyOf' in n) f.add('anyOf');
    if ('oneOf' in n) f.add('oneOf');
    if ('allOf' in n) f.add('allOf');
    if ('not' in n) f.add('not');
    if ('if' in n) f.add('if/then/else');
    if (Array.isArray(n.type)) f.add('type array');
    const types = Array.isArray(n.type) ? n.type : n.type === undefined ? [] : [n.type];
    if (types.includes('number')) f.add('type number');
    if (types.includes('integer')) f.add('type integer');
    if (types.includes('null')) f.add('type null');
    if (n.additionalProperties === true) f.add('additionalProperties: true');
    if (n.additionalProperties === false) f.add('additionalProperties: false');
    if (n.additionalProperties && typeof n.additionalProperties === 'object') f.add('additionalProperties: schema');
    if (n.additionalProperties === true && n.properties) f.add('additionalProperties: true beside properties');
    if ((types.includes('object') || n.properties) && n.additionalProperties === undefined && !isRoot) f.add('object without additionalProperties (nested)');
    if (isRoot && n.additionalProperties === undefined && (types.includes('object') || n.properties)) f.add('root object without additionalProperties');
    if ('patternProperties' in n) f.add('patternProperties');
    if ('propertyNames' in n) f.add('propertyNames');
    if ('unevaluatedProperties' in n) f.add('unevaluatedProperties');
    if (typeof n.format === 'string') {
      f.add('format');
      f.add(`format: ${n.format}`);
    }
    if ('pattern' in n) f.add('pattern');
    if ('discriminator' in n) f.add('discriminator');
    if (n.nullable === true) f.add('nullable');
    if ('prefixItems' in n) f.add('prefixItems');
    if (Array.isArray(n.items)) f.add('items array (draft-07 tuple)');
    if ('const' in n) f.add('const');
    if (Array.isArray(n.enum)) {
      f.add('enum');
      if (n.enum.some((v) => typeof v !== 'string')) f.add('enum with non-string values');
    }
    if ('default' in n) f.add('default');
    if ('examples' in n || 'example' in n) f.add('examples/example');
    if ('contentMediaType' in n) f.add('contentMediaType');
    if ('multipleOf' in n) f.add('multipleOf');
    if ('exclusiveMinimum' in n || 'exclusiveMaximum' in n) f.add('exclusiveMinimum/Maximum');
    if (typeof n.exclusiveMinimum === 'boolean' || typeof n.exclusiveMaximum === 'boolean') f.add('boolean exclusiveMinimum/Maximum (draft-04)');
    if ('uniqueItems' in n) f.add('uniqueItems');
    if (Array.isArray(n.required) && n.properties && n.required.some((r) => !(r in n.properties))) f.add('required name without a property schema');
    if (Array.isArray(n.required) && !n.properties && types.includes('object')) f.add('required without properties');
    if (n.properties && (n.oneOf || n.anyOf)) f.add('properties beside oneOf/anyOf');
    if (Object.keys(n).some((k) => k.startsWith('x-'))) f.add('x- extensions');
    if (n.properties && Object.keys(n.properties).some((k) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))) f.add('property names that are not identifiers');
    if (n.readOnly || n.writeOnly) f.add('readOnly/writeOnly');
    if (n.deprecated) f.add('deprecated');
  });
  return f;
}

/** `{ feature: number of tools }`, sorted by feature name. */
export function schemaStats(tools) {
  const counts = {};
  for (const t of tools) {
    const fs = new Set([...features(t.inputSchema), ...(t.outputSchema === undefined ? [] : [...features(t.outputSchema)].filter((x) => !x.startsWith('$schema:')))]);
    for (const x of fs) counts[x] = (counts[x] ?? 0) + 1;
  }
  return Object.fromEntries(Object.keys(counts).sort().map((k) => [k, counts[k]]));
}
