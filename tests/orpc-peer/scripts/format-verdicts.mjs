#!/usr/bin/env node
// Evaluates every string of tests/fixtures/formats/cases.json with the real
// zod 4 constructors and JavaScript's RegExp, for the differential test
// `tests/formats_zod.rs`. Prints one JSON object on stdout:
//
//   values        every distinct case string, in first-seen order
//   formats       { <format>: "0110…" }   the format's zod reference
//                                          (src/formats.mjs formatReferences)
//   constructors  { <zod expression>: "0110…" }  safeParse success
//   patterns      { <pattern source>: "0110…" | { error } }  new RegExp(src, "u")
//                 (Ajv's default `unicodeRegExp`), for every `pattern` either
//                 converter emits in tests/fixtures/formats/zod-formats.json
//   emitted       every `format` name either converter emits there
//
// Digit i of each string is the verdict on values[i] ("1" = accepted).
// Run it with `node --jitless`: Node 20's JIT-optimized `URL.canParse`
// (which `z.url()` calls) refuses URLs with Latin-1 characters such as
// "http://bücher.example/" once it is hot, so without it the verdicts would
// depend on evaluation order.
//
// With --values <file> it evaluates only the format references, on the
// strings of that file (see below).
//
// With --labels it instead checks the valid/invalid labels of cases.json
// against the format references and exits 1 naming every wrong label.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constructors, formatReferences } from '../src/formats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = resolve(here, '../../fixtures/formats');
const cases = JSON.parse(readFileSync(resolve(fixtures, 'cases.json'), 'utf8'));
const schemas = JSON.parse(readFileSync(resolve(fixtures, 'zod-formats.json'), 'utf8'));

const values = [];
const seen = new Set();
for (const { valid, invalid } of Object.values(cases)) {
  for (const v of [...valid, ...invalid]) {
    if (!seen.has(v)) {
      seen.add(v);
      values.push(v);
    }
  }
}
const bits = (f) => values.map((v) => (f(v) ? '1' : '0')).join('');

// With --values <file.json> (a JSON array of strings): only the format
// references, on those strings instead of the cases, as
// { "count": n, "formats": { <format>: "0110…" } }. The Rust test passes
// the mutated strings it generated from the cases.
const valuesAt = process.argv.indexOf('--values');
if (valuesAt !== -1) {
  const given = JSON.parse(readFileSync(process.argv[valuesAt + 1], 'utf8'));
  if (!Array.isArray(given) || !given.every((v) => typeof v === 'string')) {
    console.error('--values: the file must hold a JSON array of strings');
    process.exit(2);
  }
  const givenBits = (f) => given.map((v) => (f(v) ? '1' : '0')).join('');
  process.stdout.write(
    JSON.stringify({
      count: given.length,
      formats: Object.fromEntries(Object.entries(formatReferences).map(([f, ref]) => [f, givenBits(ref)])),
    }),
  );
}

if (valuesAt === -1 && process.argv.includes('--labels')) {
  const wrong = [];
  for (const [format, { valid, invalid }] of Object.entries(cases)) {
    const reference = formatReferences[format];
    if (!reference) {
      wrong.push(`${format}: no zod reference in src/formats.mjs`);
      continue;
    }
    for (const v of valid) if (!reference(v)) wrong.push(`${format}: zod refuses the "valid" case ${JSON.stringify(v)}`);
    for (const v of invalid) if (reference(v)) wrong.push(`${format}: zod accepts the "invalid" case ${JSON.stringify(v)}`);
  }
  if (wrong.length) {
    console.error(wrong.join('\n'));
    process.exit(1);
  }
  console.log('labels agree with zod');
  process.exit(0);
}

if (valuesAt === -1) {
  const patterns = new Set();
  const emitted = new Set();
  const collect = (node) => {
    if (Array.isArray(node)) node.forEach(collect);
    else if (node && typeof node === 'object') {
      if (typeof node.pattern === 'string') patterns.add(node.pattern);
      if (typeof node.format === 'string') emitted.add(node.format);
      Object.values(node).forEach(collect);
    }
  };
  collect(schemas);

  const out = {
    values,
    formats: Object.fromEntries(Object.entries(formatReferences).map(([f, ref]) => [f, bits(ref)])),
    constructors: Object.fromEntries(constructors.map(([name, schema]) => [name, bits((v) => schema.safeParse(v).success)])),
    patterns: Object.fromEntries(
      [...patterns].map((src) => {
        try {
          const re = new RegExp(src, 'u');
          return [src, bits((v) => re.test(v))];
        } catch (err) {
          return [src, { error: String(err.message) }];
        }
      }),
    ),
    emitted: [...emitted].sort(),
  };
  process.stdout.write(JSON.stringify(out));
}
