// oRPC's own playground contract through both zod → JSON Schema converters.
//
// The contract-first playground's `src/contract/` and `src/schemas/` files
// (zod 4 + `@orpc/contract`) are read from a checkout of the oRPC repository
// given on the command line, copied to a temporary folder outside this
// repository, stripped of their TypeScript types with esbuild, and imported.
// Their code is never committed; only the JSON Schemas the converters produce
// are.

import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transform } from 'esbuild';
import { z } from 'zod';
import { ZodToJsonSchemaConverter } from '@orpc/zod/zod4';

const HERE = dirname(fileURLToPath(import.meta.url));

/** The playground folder inside the oRPC repository, and the files taken from it. */
export const PLAYGROUND = 'playgrounds/contract-first/src';
const FOLDERS = ['contract', 'schemas'];

function listTs(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listTs(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []))
    .sort();
}

/**
 * Copies and transpiles the playground contract from `orpcCheckout` into
 * `workDir`, imports it and returns `{ contract, digest }` (`digest`: SHA-256
 * over the source files' paths and contents, recorded so a regeneration
 * says which sources it used).
 */
export async function loadPlaygroundContract(orpcCheckout, workDir) {
  const src = join(orpcCheckout, PLAYGROUND);
  const out = join(workDir, 'orpc-playground');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  // Bare imports (`zod`, `@orpc/contract`, `@orpc/zod/zod4`) resolve to this
  // tool's own node_modules, so the converter and the contract share one
  // zod instance (and oRPC's JSON_SCHEMA_REGISTRY).
  symlinkSync(join(HERE, '..', 'node_modules'), join(out, 'node_modules'), 'dir');
  writeFileSync(join(out, 'package.json'), '{"type":"module","private":true}\n');
  const hash = createHash('sha256');
  for (const folder of FOLDERS) {
    for (const file of listTs(join(src, folder))) {
      const rel = relative(src, file);
      const text = readFileSync(file, 'utf8');
      hash.update(`${rel}\0${text}\0`);
      const { code } = await transform(text, { loader: 'ts', format: 'esm', target: 'node20' });
      // Relative imports are written without an extension in the playground.
      const js = code.replace(/(from\s+["'])(\.{1,2}\/[^"']+)(["'])/g, '$1$2.mjs$3');
      const dest = join(out, rel.replace(/\.ts$/, '.mjs'));
      mkdirSync(dirname(dest), { recursive: true });
      writeFileSync(dest, js);
    }
  }
  cpSync(join(orpcCheckout, 'LICENSE'), join(out, 'LICENSE'));
  const mod = await import(pathToFileURL(join(out, 'contract', 'index.mjs')).href);
  return { contract: mod.contract, digest: hash.digest('hex') };
}

/** Walks a contract router: `[{ path: ['auth', 'signup'], procedure }]`, sorted. */
export function procedures(router, prefix = []) {
  const out = [];
  for (const key of Object.keys(router).sort()) {
    const value = router[key];
    if (value && value['~orpc']) out.push({ path: [...prefix, key], procedure: value });
    else if (value && typeof value === 'object') out.push(...procedures(value, [...prefix, key]));
  }
  return out;
}

const orpcConverter = new ZodToJsonSchemaConverter();

/** The two converters, by source suffix: `io` is `'input'` or `'output'`. */
export const CONVERTERS = {
  orpc: {
    label: '@orpc/zod/zod4 ZodToJsonSchemaConverter (strategy input/output)',
    convert: (schema, io) => orpcConverter.convert(schema, { strategy: io })[1],
  },
  zod: {
    label: "zod 4 z.toJSONSchema (io: 'input'/'output')",
    convert: (schema, io) => z.toJSONSchema(schema, { io }),
  },
};

/**
 * The procedures of `contract` as corpus tools through `converter`:
 * `[{ name, description, inputSchema, outputSchema?, effect, method, notes }]`.
 * A procedure without an input schema takes no input (oRPC passes
 * `undefined`): the converter is not asked, `inputSchema` is `{}` and a note
 * says so. An output that is not a zod schema (an `eventIterator`) gets no
 * `outputSchema` and a note.
 */
export function playgroundTools(contract, converter) {
  const tools = [];
  for (const { path, procedure } of procedures(contract)) {
    const def = procedure['~orpc'];
    const notes = [];
    const tool = { name: path.join('.'), description: def.route?.summary ?? '' };
    if (def.inputSchema) tool.inputSchema = converter.convert(def.inputSchema, 'input');
    else {
      tool.inputSchema = {};
      notes.push('no input schema: the procedure takes no input; inputSchema is {}');
    }
    if (def.outputSchema && def.outputSchema['~standard']?.vendor === 'zod') {
      tool.outputSchema = converter.convert(def.outputSchema, 'output');
    } else if (def.outputSchema) {
      notes.push(`output is not a zod schema (vendor ${def.outputSchema['~standard']?.vendor ?? 'unknown'}): no outputSchema`);
    }
    tool.effect = (def.route?.method ?? 'POST') === 'GET' ? 'server-query' : 'server-mutation';
    tool.method = def.route?.method ?? 'POST';
    tool.notes = notes;
    tools.push(tool);
  }
  return tools;
}
