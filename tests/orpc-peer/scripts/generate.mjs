#!/usr/bin/env node
// Generates the JSON fixtures under tests/fixtures/ from the peer's zod/oRPC
// contracts (README.md, "Fixtures").
//
//   node tests/orpc-peer/scripts/generate.mjs          write every fixture
//   node tests/orpc-peer/scripts/generate.mjs --check  compare, exit 1 on drift
//
// Before anything is written, every construct sample is checked:
// - input samples: zod `parse` with the input schema succeeds; Ajv (JSON
//   Schema 2020-12, with formats) accepts them against the oRPC and the zod
//   input JSON Schemas;
// - output samples: zod `parse` with the output schema succeeds and returns
//   the sample unchanged (so it is a real output: defaults filled, nothing
//   stripped); Ajv accepts them against the oRPC and zod output JSON Schemas.
// Any invalid sample fails the script (exit 1) naming the path and sample.

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { constructs, constructsRouter } from '../src/constructs.mjs';
import { fixtureText, sortedKeys } from '../src/json.mjs';
import { buildManifest, orpcJsonSchema, pathProblems, zodJsonSchema } from '../src/manifest.mjs';
import { domainRouter } from '../src/domain.mjs';

const addFormats = addFormatsModule.default ?? addFormatsModule;
const here = dirname(fileURLToPath(import.meta.url));
const fixturesDir = resolve(here, '../../fixtures');
const repoRoot = resolve(here, '../../..');
const CONSTRUCTS_PREFIX = 'constructs';

function newAjv() {
  // strictTuples off: oRPC's converter emits `prefixItems` without
  // `minItems`/`items`, which Ajv's strict mode would refuse to compile.
  const ajv = new Ajv2020({ strict: true, strictTuples: false, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

function checkSamples(orpcManifest, zodManifest) {
  const ajv = newAjv();
  const problems = [];
  const compiled = new Map();
  const validator = (label, schema) => {
    if (!compiled.has(label)) compiled.set(label, ajv.compile(schema));
    return compiled.get(label);
  };
  for (const c of constructs) {
    const path = `${CONSTRUCTS_PREFIX}.${c.name}`;
    const sets = [['input', c.input, c.samples.input]];
    if (c.output) sets.push(['output', c.output, c.samples.output]);
    else if (c.samples.output?.length) problems.push(`${path}: output samples given but no output schema`);
    for (const [io, schema, samples] of sets) {
      if (!Array.isArray(samples) || samples.length === 0) {
        problems.push(`${path}: no ${io} samples`);
        continue;
      }
      const key = io === 'input' ? 'inputSchema' : 'outputSchema';
      const jsonSchemas = [
        ['oRPC', orpcManifest.tools[path][key]],
        ['zod', zodManifest.tools[path][key]],
      ];
      samples.forEach((sample, i) => {
        const where = `${path} ${io} sample #${i} ${JSON.stringify(sample)}`;
        if (!isDeepStrictEqual(JSON.parse(JSON.stringify(sample)), sample)) {
          problems.push(`${where}: not plain JSON`);
        }
        const parsed = schema.safeParse(sample);
        if (!parsed.success) {
          problems.push(`${where}: zod parse failed: ${JSON.stringify(parsed.error.issues)}`);
        } else if (io === 'output' && !isDeepStrictEqual(parsed.data, sample)) {
          problems.push(`${where}: zod output differs from the sample: ${JSON.stringify(parsed.data)}`);
        }
        for (const [label, jsonSchema] of jsonSchemas) {
          const validate = validator(`${label} ${path} ${io}`, jsonSchema);
          if (!validate(sample)) {
            problems.push(`${where}: invalid against the ${label} ${io} JSON Schema: ${ajv.errorsText(validate.errors)}`);
          }
        }
      });
    }
  }
  return problems;
}

function samplesFixture() {
  const out = {};
  for (const c of constructs) {
    out[`${CONSTRUCTS_PREFIX}.${c.name}`] = { input: c.samples.input, output: c.output ? c.samples.output : [] };
  }
  return sortedKeys(out);
}

async function buildArtifacts() {
  const router = { [CONSTRUCTS_PREFIX]: constructsRouter() };
  const orpcManifest = await buildManifest(router, orpcJsonSchema);
  const zodManifest = await buildManifest(router, zodJsonSchema);
  const problems = checkSamples(orpcManifest, zodManifest);
  if (problems.length) {
    throw new Error(`invalid construct samples:\n  ${problems.join('\n  ')}`);
  }
  const devicesManifest = await buildManifest(domainRouter, orpcJsonSchema);
  for (const [name, manifest] of [
    ['codegen/orpc.manifest.json', orpcManifest],
    ['codegen/zod.manifest.json', zodManifest],
    ['devices.manifest.json', devicesManifest],
  ]) {
    const bad = pathProblems(Object.keys(manifest.tools));
    if (bad.length) throw new Error(`${name}: invalid manifest paths:\n  ${bad.join('\n  ')}`);
  }
  return new Map([
    ['codegen/orpc.manifest.json', fixtureText(orpcManifest)],
    ['codegen/zod.manifest.json', fixtureText(zodManifest)],
    ['codegen/samples.json', fixtureText(samplesFixture())],
    ['devices.manifest.json', fixtureText(devicesManifest)],
  ]);
}

async function main() {
  const check = process.argv.includes('--check');
  const artifacts = await buildArtifacts();
  const drift = [];
  for (const [rel, text] of artifacts) {
    const file = join(fixturesDir, rel);
    const shown = relative(repoRoot, file);
    if (check) {
      let current = null;
      try {
        current = readFileSync(file, 'utf8');
      } catch {
        current = null;
      }
      if (current !== text) drift.push(shown);
    } else {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
      console.log(`wrote ${shown}`);
    }
  }
  if (drift.length) {
    for (const f of drift) console.error(`drift: ${f} differs from what generate.mjs produces; run \`npm run generate\` in tests/orpc-peer`);
    process.exit(1);
  }
  if (check) console.log(`fixtures up to date (${artifacts.size} files)`);
}

main().catch((err) => {
  console.error(err.message ?? err);
  process.exit(1);
});
