#!/usr/bin/env node
// Regenerates tests/fixtures/corpus/ — public tool schemas as test data.
//
//   node generate.mjs [options]           write every file
//   node generate.mjs --check [options]   regenerate in memory, compare, exit 1 on drift
//
// Options:
//   --offline              do not install or run MCP servers: rebuild their
//                          manifests from the committed raw/mcp/*.json
//   --only=a,b             collect only these MCP sources (others from raw/)
//   --openai-spec=PATH     openapi.json of the openai/openai-openapi repository
//                          (the commit and SHA-256 below); without it the
//                          committed openai files are kept as they are
//   --orpc-repo=PATH       a checkout of the oRPC repository (commit below);
//                          without it the committed orpc_playground* files are kept
//   --no-netns             run MCP servers without `unshare --net`
//
// Stages: (1) collect — MCP `tools/list` (lib/mcp.mjs), OpenAPI request bodies
// (lib/openapi.mjs), oRPC playground schemas (lib/orpc.mjs); (2) build —
// manifests, name sidecars, samples (lib/samples.mjs), all.manifest.json,
// sources.json. The build stage is deterministic: same inputs, same bytes.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVERS, WORK_DIR, fallbackLicenseFile, install, listTools, packageInfo } from './lib/mcp.mjs';
import { jsonBodyOperations, openapiEffect } from './lib/openapi.mjs';
import { CONVERTERS, PLAYGROUND, loadPlaygroundContract, playgroundTools } from './lib/orpc.mjs';
import { assignPaths, fixtureText, manifestTool, mcpEffect, pathProblems, sortedKeys } from './lib/manifest.mjs';
import { samplesFor } from './lib/samples.mjs';
import { schemaStats } from './lib/stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const CORPUS = resolve(here, '../fixtures/corpus');
const REPO = resolve(here, '../..');

/** The OpenAI description: repository commit and the SHA-256 of its openapi.json. */
export const OPENAI = {
  repo: 'openai/openai-openapi',
  commit: 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3',
  file: 'openapi.json',
  sha256: 'bbfd19abcde0e7412da99378deb2a959ccdd3a812f97c9e35901921e8e973f9a',
};

/** The oRPC repository commit whose contract-first playground is converted. */
export const ORPC = {
  repo: 'unnoq/orpc',
  commit: 'eaadb5fce63e3f5856dbb79a4a64e81309af2c7e',
  sourcesSha256: '2722bac550602d61758bf8f3eb7f18501cf4cac6b5923dd1c36a8594dc6a2131',
};

/** GitHub's REST description from the @octokit/openapi npm package: every GITHUB_EVERY-th JSON-body operation. */
const GITHUB_EVERY = 4;

function parseArgs(argv) {
  const opts = { check: false, offline: false, netns: true, only: null, openaiSpec: null, orpcRepo: null };
  for (const a of argv) {
    if (a === '--check') opts.check = true;
    else if (a === '--offline') opts.offline = true;
    else if (a === '--no-netns') opts.netns = false;
    else if (a.startsWith('--only=')) opts.only = a.slice(7).split(',');
    else if (a.startsWith('--openai-spec=')) opts.openaiSpec = a.slice(14);
    else if (a.startsWith('--orpc-repo=')) opts.orpcRepo = a.slice(12);
    else throw new Error(`unknown option ${a}`);
  }
  return opts;
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function sha256(text) {
  return createHash('sha256').update(text).digest('hex');
}

// ---------------------------------------------------------------- collect

/**
 * One MCP server's raw record: package, version, licence, and the raw
 * `tools/list` result pages.
 */
async function collectMcp(server, opts) {
  const pkgDir = install(server);
  const info = packageInfo(pkgDir);
  if (info.version !== server.version) throw new Error(`${server.pkg}: installed ${info.version}, pinned ${server.version}`);
  const { pages } = await listTools(server, { netns: opts.netns });
  return {
    raw: {
      source: server.source,
      package: server.pkg,
      version: info.version,
      license: info.license,
      command: ['<bin>', ...(server.args ? server.args() : [])].map((a) => a.replace(WORK_DIR, '$CORPUS_TMP')),
      env: Object.keys(typeof server.env === 'function' ? server.env() : server.env ?? {}).sort(),
      pages,
    },
    licenseText: info.licenseText,
  };
}

function mcpSource(raw, licenseFile) {
  const tools = raw.pages.flatMap((p) => p.tools ?? []);
  const paths = assignPaths(raw.source, tools);
  return {
    source: raw.source,
    kind: 'mcp',
    origin: { package: raw.package, version: raw.version },
    license: { spdx: raw.license, file: `LICENSES/${licenseFile}` },
    tools: tools.map((t, i) => ({
      path: paths[i],
      name: { name: t.name },
      entry: manifestTool({
        description: t.description,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        effect: mcpEffect(t.annotations),
      }),
    })),
  };
}

function openapiSource({ source, spec, operations, origin, license }) {
  const paths = assignPaths(source, operations.map((o) => ({ name: o.operationId })));
  return {
    source,
    kind: 'openapi',
    origin: { ...origin, openapi: spec.openapi, operations: operations.length },
    license,
    tools: operations.map((o, i) => ({
      path: paths[i],
      name: { operationId: o.operationId, method: o.method, path: o.path, ...(o.rootComponent ? { component: o.rootComponent } : {}) },
      entry: manifestTool({
        description: o.summary || o.description,
        inputSchema: o.schema,
        effect: openapiEffect(o.method),
      }),
    })),
  };
}

function orpcSource(source, contract, converterKey) {
  const converter = CONVERTERS[converterKey];
  const tools = playgroundTools(contract, converter);
  const paths = assignPaths(source, tools, { splitDots: true });
  return {
    source,
    kind: 'orpc',
    origin: { repo: ORPC.repo, commit: ORPC.commit, playground: PLAYGROUND, converter: converter.label },
    license: { spdx: 'MIT', file: 'LICENSES/orpc.txt' },
    tools: tools.map((t, i) => ({
      path: paths[i],
      name: { name: t.name, method: t.method, ...(t.notes.length ? { notes: t.notes } : {}) },
      entry: manifestTool(t),
    })),
  };
}

/** A source whose inputs were not given: its committed files, as they are. */
function keptSource(source) {
  const manifest = readJson(join(CORPUS, `${source}.manifest.json`));
  const names = readJson(join(CORPUS, `${source}.names.json`));
  const meta = readJson(join(CORPUS, 'sources.json')).sources.find((s) => s.source === source);
  return {
    source,
    kind: meta.kind,
    origin: meta.origin,
    license: meta.license,
    kept: true,
    tools: Object.entries(manifest.tools).map(([path, entry]) => ({ path, name: names[path], entry })),
  };
}

// ---------------------------------------------------------------- build

function buildFiles(sources) {
  const files = new Map();
  const all = {};
  const summary = [];
  for (const s of sources) {
    const tools = {};
    const names = {};
    for (const t of s.tools) {
      if (t.path in all) throw new Error(`${t.path} appears in two sources`);
      tools[t.path] = t.entry;
      names[t.path] = t.name;
      all[t.path] = t.entry;
    }
    const problems = pathProblems(Object.keys(tools));
    if (problems.length) throw new Error(`${s.source}: invalid paths:\n  ${problems.join('\n  ')}`);
    const manifest = { tools: sortedKeys(tools) };
    files.set(`${s.source}.manifest.json`, fixtureText(manifest));
    files.set(`${s.source}.names.json`, fixtureText(sortedKeys(names)));
    // OpenAPI 3.0 schemas are draft-04/05 style: Ajv's draft-07 class is the
    // closest; everything else without `$schema` is JSON Schema 2020-12
    // (the MCP and OpenAPI 3.1 default).
    const fallbackDialect = s.kind === 'openapi' && String(s.origin.openapi).startsWith('3.0') ? 'draft-07' : '2020-12';
    const { samples, report } = samplesFor(manifest, { fallbackDialect });
    files.set(`${s.source}.samples.json`, fixtureText(samples));
    summary.push({
      source: s.source,
      kind: s.kind,
      origin: s.origin,
      license: s.license,
      tools: s.tools.length,
      withOutputSchema: s.tools.filter((t) => t.entry.outputSchema !== undefined).length,
      effects: countBy(s.tools.map((t) => t.entry.effect)),
      samples: report,
      features: schemaStats(Object.values(manifest.tools)),
    });
  }
  const problems = pathProblems(Object.keys(all));
  if (problems.length) throw new Error(`all: invalid paths:\n  ${problems.join('\n  ')}`);
  const allText = fixtureText({ tools: sortedKeys(all) });
  files.set('all.manifest.json', allText);
  files.set(
    'sources.json',
    fixtureText({
      total: { sources: sources.length, tools: Object.keys(all).length, allManifestBytes: Buffer.byteLength(allText) },
      features: schemaStats(Object.values(all)),
      sources: summary,
    }),
  );
  return files;
}

function countBy(values) {
  const out = {};
  for (const v of values.sort()) out[v] = (out[v] ?? 0) + 1;
  return out;
}

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const files = new Map();
  const notes = [];

  // MCP servers, in parallel batches (each waits on its own process).
  const mcp = [];
  const chosen = SERVERS.filter((s) => !opts.offline && (!opts.only || opts.only.includes(s.source)));
  const collected = new Map();
  for (let i = 0; i < chosen.length; i += 4) {
    const batch = chosen.slice(i, i + 4);
    const results = await Promise.allSettled(batch.map((s) => collectMcp(s, opts)));
    results.forEach((r, j) => {
      if (r.status === 'rejected') throw r.reason;
      collected.set(batch[j].source, r.value);
    });
  }
  for (const server of SERVERS) {
    const rawFile = `raw/mcp/${server.source}.json`;
    let raw;
    let licenseFile;
    if (collected.has(server.source)) {
      const { raw: r, licenseText } = collected.get(server.source);
      raw = r;
      files.set(rawFile, fixtureText(raw));
      if (licenseText) {
        licenseFile = `${server.source}.txt`;
        files.set(`LICENSES/${licenseFile}`, licenseText.endsWith('\n') ? licenseText : `${licenseText}\n`);
      } else {
        licenseFile = fallbackLicenseFile(server);
        if (!licenseFile || !existsSync(join(CORPUS, 'LICENSES', licenseFile))) throw new Error(`${server.pkg} ships no licence file and has no fallback`);
      }
    } else {
      const rawText = readFileSync(join(CORPUS, rawFile), 'utf8');
      files.set(rawFile, rawText);
      raw = JSON.parse(rawText);
      if (raw.version !== server.version) throw new Error(`${rawFile} is ${raw.version}, pinned ${server.version}: run without --offline`);
      licenseFile = existsSync(join(CORPUS, 'LICENSES', `${server.source}.txt`)) ? `${server.source}.txt` : fallbackLicenseFile(server);
      notes.push(`${server.source}: from committed ${rawFile}`);
    }
    mcp.push(mcpSource(raw, licenseFile));
  }

  // OpenAI.
  let openai;
  if (opts.openaiSpec) {
    const text = readFileSync(opts.openaiSpec, 'utf8');
    if (sha256(text) !== OPENAI.sha256) throw new Error(`${opts.openaiSpec}: SHA-256 ${sha256(text)}, expected ${OPENAI.sha256} (${OPENAI.repo} ${OPENAI.commit})`);
    const spec = JSON.parse(text);
    openai = openapiSource({
      source: 'openai',
      spec,
      operations: jsonBodyOperations(spec),
      origin: { repo: OPENAI.repo, commit: OPENAI.commit, file: OPENAI.file, sha256: OPENAI.sha256 },
      license: { spdx: 'MIT', file: 'LICENSES/openai-openapi.txt' },
    });
  } else {
    openai = keptSource('openai');
    notes.push('openai: kept as committed (no --openai-spec)');
  }

  // GitHub REST, from the npm package (a deterministic sample).
  const octokitDir = join(here, 'node_modules', '@octokit', 'openapi');
  const octokitPkg = readJson(join(octokitDir, 'package.json'));
  const ghSpec = readJson(join(octokitDir, 'generated', 'api.github.com.json'));
  const ghAll = jsonBodyOperations(ghSpec);
  files.set('LICENSES/github_rest.txt', readFileSync(join(octokitDir, 'LICENSE'), 'utf8'));
  const github = openapiSource({
    source: 'github_rest',
    spec: ghSpec,
    operations: ghAll.filter((_, i) => i % GITHUB_EVERY === 0),
    origin: { package: octokitPkg.name, version: octokitPkg.version, file: 'generated/api.github.com.json', sample: `every ${GITHUB_EVERY}th of ${ghAll.length} operations with a JSON request body, by operationId` },
    license: { spdx: octokitPkg.license, file: 'LICENSES/github_rest.txt' },
  });

  // oRPC playground.
  let orpc;
  if (opts.orpcRepo) {
    const { contract, digest } = await loadPlaygroundContract(opts.orpcRepo, WORK_DIR);
    if (digest !== ORPC.sourcesSha256) throw new Error(`${opts.orpcRepo}/${PLAYGROUND}: sources digest ${digest}, expected ${ORPC.sourcesSha256} (${ORPC.repo} ${ORPC.commit})`);
    orpc = [orpcSource('orpc_playground', contract, 'orpc'), orpcSource('orpc_playground_zod', contract, 'zod')];
  } else {
    orpc = [keptSource('orpc_playground'), keptSource('orpc_playground_zod')];
    notes.push('orpc_playground, orpc_playground_zod: kept as committed (no --orpc-repo)');
  }

  for (const [name, text] of buildFiles([...mcp, openai, github, ...orpc])) files.set(name, text);

  const drift = [];
  for (const [rel, text] of [...files].sort()) {
    const file = join(CORPUS, rel);
    if (opts.check) {
      const current = existsSync(file) ? readFileSync(file, 'utf8') : null;
      if (current !== text) drift.push(relative(REPO, file));
    } else {
      mkdirSync(dirname(file), { recursive: true });
      if (!existsSync(file) || readFileSync(file, 'utf8') !== text) writeFileSync(file, text);
    }
  }
  // Files of the corpus that this run would no longer produce.
  const produced = new Set(files.keys());
  const stale = listFiles(CORPUS)
    .filter((f) => /\.(manifest|names|samples)\.json$/.test(f) || f.startsWith('raw/'))
    .filter((f) => !produced.has(f));
  for (const n of notes) console.log(`note: ${n}`);
  for (const f of stale) console.error(`stale: tests/fixtures/corpus/${f} is not produced any more; delete it`);
  if (opts.check) {
    for (const f of drift) console.error(`drift: ${f} differs from what generate.mjs produces`);
    if (drift.length || stale.length) process.exit(1);
    console.log(`corpus up to date (${files.size} files checked)`);
  } else {
    console.log(`wrote tests/fixtures/corpus/ (${files.size} files)`);
    if (stale.length) process.exit(1);
  }
}

function listFiles(dir, prefix = '') {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(dir, join(prefix, e.name)) : [join(prefix, e.name)],
  );
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    console.error(e.stack ?? e);
    process.exit(1);
  },
);
