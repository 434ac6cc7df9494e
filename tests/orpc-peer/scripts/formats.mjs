#!/usr/bin/env node
// Writes tests/fixtures/formats/zod-formats.json: for every zod string-format
// constructor of src/formats.mjs, the JSON Schema that oRPC's converter
// (`@orpc/zod/zod4`, strategy input) and zod's own `z.toJSONSchema` (io input)
// emit. A converter that throws is recorded as `{ "error": message }`.
//
//   node tests/orpc-peer/scripts/formats.mjs          write the fixture
//   node tests/orpc-peer/scripts/formats.mjs --check  compare, exit 1 on drift

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constructors } from '../src/formats.mjs';
import { fixtureText } from '../src/json.mjs';
import { orpcJsonSchema, zodJsonSchema } from '../src/manifest.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../../..');
export const FIXTURE = resolve(repoRoot, 'tests/fixtures/formats/zod-formats.json');

const attempt = (convert) => {
  try {
    return convert();
  } catch (err) {
    return { error: String(err?.message ?? err) };
  }
};

export function formatSchemas() {
  const out = {};
  for (const [name, schema] of constructors) {
    out[name] = {
      orpc: attempt(() => orpcJsonSchema(schema, 'input')),
      zod: attempt(() => zodJsonSchema(schema, 'input')),
    };
  }
  return out;
}

function main() {
  const text = fixtureText(formatSchemas());
  const shown = relative(repoRoot, FIXTURE);
  if (process.argv.includes('--check')) {
    let current = null;
    try {
      current = readFileSync(FIXTURE, 'utf8');
    } catch {
      current = null;
    }
    if (current !== text) {
      console.error(`drift: ${shown} differs from what scripts/formats.mjs produces; run \`node scripts/formats.mjs\` in tests/orpc-peer`);
      process.exit(1);
    }
    console.log(`${shown} up to date`);
    return;
  }
  mkdirSync(dirname(FIXTURE), { recursive: true });
  writeFileSync(FIXTURE, text);
  console.log(`wrote ${shown}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
