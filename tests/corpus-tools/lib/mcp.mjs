// Collects real MCP servers' `tools/list` output.
//
// Each server package is installed (pinned version, `--ignore-scripts`, so no
// browser or binary download runs) into its own folder under a temporary
// directory outside the repository, started over stdio with the MCP SDK's
// `StdioClientTransport` and the SDK's `Client` (which runs the initialize
// handshake), then asked for its tools with `tools/list` requests sent on the
// transport (following `nextCursor`). The raw JSON-RPC `result` objects are
// kept as the server sent them: the SDK's `listTools` result schema refuses
// some real servers' output (gitlab's inputSchema without `type`).
//
// Servers run inside a fresh network namespace (`unshare --net`, only the
// loopback interface up), with a throw-away HOME and dummy credentials, so a
// server can reach nothing but 127.0.0.1 while it starts.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const HERE = dirname(fileURLToPath(import.meta.url));

/** Where everything outside the repository goes (packages, HOME, server roots). */
export const WORK_DIR = process.env.CORPUS_TMP ?? '/tmp/agent-surface-corpus';

// A fixed (not random) directory: some servers write the directories they were
// given into their tool descriptions, which must not change between runs.
const FS_ROOT = join(WORK_DIR, 'fs-root');

/**
 * The servers: `source` (the manifest namespace and file name), the npm
 * package and its pinned version, the `bin` to run (from the package's
 * `bin`), extra arguments, and dummy environment variables for servers that
 * refuse to start without credentials. Every token is a dummy; every URL is
 * loopback.
 */
export const SERVERS = [
  { source: 'filesystem', pkg: '@modelcontextprotocol/server-filesystem', version: '2026.8.31', args: () => [FS_ROOT] },
  { source: 'github', pkg: '@modelcontextprotocol/server-github', version: '2025.4.8', env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy-token' } },
  {
    source: 'gitlab',
    pkg: '@modelcontextprotocol/server-gitlab',
    version: '2025.4.25',
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy-token', GITLAB_API_URL: 'http://127.0.0.1:9/api/v4' },
  },
  { source: 'memory', pkg: '@modelcontextprotocol/server-memory', version: '2026.8.31', env: () => ({ MEMORY_FILE_PATH: join(WORK_DIR, 'memory.jsonl') }) },
  { source: 'everything', pkg: '@modelcontextprotocol/server-everything', version: '2026.8.31', args: () => ['stdio'] },
  { source: 'puppeteer', pkg: '@modelcontextprotocol/server-puppeteer', version: '2025.5.12' },
  { source: 'slack', pkg: '@modelcontextprotocol/server-slack', version: '2025.4.25', env: { SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T00000000' } },
  { source: 'brave_search', pkg: '@modelcontextprotocol/server-brave-search', version: '0.6.2', env: { BRAVE_API_KEY: 'dummy-key' } },
  { source: 'google_maps', pkg: '@modelcontextprotocol/server-google-maps', version: '0.6.2', env: { GOOGLE_MAPS_API_KEY: 'dummy-key' } },
  { source: 'sequential_thinking', pkg: '@modelcontextprotocol/server-sequential-thinking', version: '2026.8.31' },
  { source: 'postgres', pkg: '@modelcontextprotocol/server-postgres', version: '0.6.2', args: () => ['postgresql://127.0.0.1:9/corpus'] },
  // Exits unless a Redis answers: a loopback stand-in (lib/fake-redis.mjs)
  // runs beside it in the same network namespace.
  { source: 'redis', pkg: '@modelcontextprotocol/server-redis', version: '2025.4.25', args: () => ['redis://127.0.0.1:6379'], sidecar: 'fake-redis.mjs 6379' },
  // All optional capabilities, so their tools are listed too.
  { source: 'playwright', pkg: '@playwright/mcp', version: '0.0.83', args: () => ['--headless', '--caps=vision,pdf,devtools'] },
  { source: 'notion', pkg: '@notionhq/notion-mcp-server', version: '2.5.2', env: { NOTION_TOKEN: 'ntn_dummy' } },
  { source: 'context7', pkg: '@upstash/context7-mcp', version: '4.1.1' },
  { source: 'firecrawl', pkg: 'firecrawl-mcp', version: '3.26.0', env: { FIRECRAWL_API_KEY: 'fc-dummy' } },
  { source: 'kubernetes', pkg: 'mcp-server-kubernetes', version: '4.1.7' },
  // Its `docs` feature builds a tool schema from a remote GraphQL API at
  // list time; every other feature group is listed.
  {
    source: 'supabase',
    pkg: '@supabase/mcp-server-supabase',
    version: '0.13.0',
    args: () => ['--features=account,database,debugging,development,functions,branching,storage'],
    env: { SUPABASE_ACCESS_TOKEN: 'sbp_dummy' },
  },
  // `--mode all`: one tool per command (the default mode lists one router
  // tool per namespace, with an untyped `parameters` object).
  { source: 'azure', pkg: '@azure/mcp', version: '2.0.5', args: () => ['server', 'start', '--mode', 'all'] },
  // 0.3.x only proxies a remote server; 0.2.5 lists @stripe/agent-toolkit's tools locally.
  { source: 'stripe', pkg: '@stripe/mcp', version: '0.2.5', args: () => ['--tools=all', '--api-key=sk_test_dummy'] },
  { source: 'desktop_commander', pkg: '@wonderwhy-er/desktop-commander', version: '0.2.52' },
  { source: 'shopify_dev', pkg: '@shopify/dev-mcp', version: '1.16.0' },
  {
    source: 'cloudflare',
    pkg: '@cloudflare/mcp-server-cloudflare',
    version: '0.2.0',
    args: () => ['run', '00000000000000000000000000000000'],
    env: { CLOUDFLARE_API_TOKEN: 'dummy-token', CLOUDFLARE_ACCOUNT_ID: '00000000000000000000000000000000' },
  },
];

/**
 * Licence file (under tests/fixtures/corpus/LICENSES/, kept by hand) for
 * packages that ship no LICENSE file of their own.
 */
export function fallbackLicenseFile(server) {
  if (server.pkg.startsWith('@modelcontextprotocol/server-')) return 'modelcontextprotocol-servers.txt';
  if (server.pkg === '@stripe/mcp') return 'stripe-agent-toolkit.txt';
  return null;
}

const LIST_TIMEOUT_MS = 90_000;
const MAX_PAGES = 50;

function packageDir(server) {
  return join(WORK_DIR, 'packages', `${server.pkg.replace(/[@/]/g, '_')}@${server.version}`);
}

/** Installs `server`'s package (once) and returns its package folder. */
export function install(server) {
  const dir = packageDir(server);
  const installed = join(dir, 'node_modules', server.pkg, 'package.json');
  if (existsSync(installed) && JSON.parse(readFileSync(installed, 'utf8')).version === server.version) {
    return join(dir, 'node_modules', server.pkg);
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{"private":true}\n');
  const r = spawnSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', `${server.pkg}@${server.version}`], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1' },
  });
  if (r.status !== 0) throw new Error(`npm install ${server.pkg}@${server.version} failed:\n${r.stderr}`);
  return join(dir, 'node_modules', server.pkg);
}

function binOf(pkgDir) {
  const pj = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const bin = typeof pj.bin === 'string' ? pj.bin : Object.values(pj.bin ?? {})[0];
  if (!bin) throw new Error(`${pj.name} has no bin`);
  return join(pkgDir, bin);
}

/** `{ name, version, license, licenseText }` of an installed package. */
export function packageInfo(pkgDir) {
  const pj = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const candidates = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license', 'LICENCE', 'License.md'];
  const file = candidates.map((f) => join(pkgDir, f)).find((f) => existsSync(f));
  return { name: pj.name, version: pj.version, license: pj.license ?? null, licenseText: file ? readFileSync(file, 'utf8') : null };
}

/**
 * Runs `server` and returns `{ pages, stderr }`: `pages` are the raw
 * `tools/list` results in order.
 */
export async function listTools(server, { netns = true } = {}) {
  const pkgDir = install(server);
  const home = join(WORK_DIR, 'home', server.source);
  mkdirSync(home, { recursive: true });
  mkdirSync(FS_ROOT, { recursive: true });
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    TMPDIR: join(WORK_DIR, 'tmp'),
    NODE_ENV: 'production',
    ...(typeof server.env === 'function' ? server.env() : server.env ?? {}),
  };
  mkdirSync(env.TMPDIR, { recursive: true });
  const argv = [process.execPath, binOf(pkgDir), ...(server.args ? server.args() : [])];
  const sidecar = server.sidecar ? `"${process.execPath}" "${join(HERE, server.sidecar.split(' ')[0])}" ${server.sidecar.split(' ').slice(1).join(' ')} & sleep 0.3; ` : '';
  const script = `${netns ? 'ip link set lo up && ' : ''}${sidecar}exec "$@"`;
  const [command, args] = netns
    ? ['unshare', ['--net', '--', 'sh', '-c', script, 'sh', ...argv]]
    : ['sh', ['-c', script, 'sh', ...argv]];
  const transport = new StdioClientTransport({ command, args, env, cwd: home, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => {
    if (stderr.length < 20_000) stderr += d.toString();
  });
  const client = new Client({ name: 'agent-surface-corpus', version: '0.0.0' });
  const timer = setTimeout(() => transport.close(), LIST_TIMEOUT_MS);
  try {
    await client.connect(transport);
    // `tools/list` is sent by hand and its response taken before the SDK
    // client sees it: the raw result is kept even where the SDK's own result
    // schema would refuse it (a server whose `inputSchema` is not
    // `type: object`, for instance).
    const waiting = new Map();
    const onmessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const id = message && typeof message === 'object' ? message.id : undefined;
      if (typeof id === 'string' && waiting.has(id)) {
        const { resolve, reject } = waiting.get(id);
        waiting.delete(id);
        if (message.error) reject(new Error(`tools/list error ${JSON.stringify(message.error)}`));
        else resolve(message.result);
        return;
      }
      onmessage?.(message, extra);
    };
    const closed = new Promise((_, reject) => {
      transport.onclose = () => reject(new Error('the server closed the connection'));
    });
    const pages = [];
    let cursor;
    for (let i = 0; i < MAX_PAGES; i++) {
      const id = `corpus-tools-list-${i}`;
      const result = new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
      await transport.send({ jsonrpc: '2.0', id, method: 'tools/list', params: cursor === undefined ? {} : { cursor } });
      const page = await Promise.race([result, closed]);
      pages.push(page);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    return { pages, stderr };
  } catch (e) {
    throw new Error(`${server.source} (${server.pkg}@${server.version}): ${e.message}\n--- stderr ---\n${stderr}`);
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => {});
  }
}
