#!/usr/bin/env node
// `npm run package`: builds dist/ when it is missing or older than its sources, checks what vsce
// would pack against the allow-list in .vscodeignore, then writes ebpf-studio-<version>.vsix.
// Usage: node scripts/package.mjs [--no-build] [--out FILE] [build flags, e.g. --skip-typecheck]
// --no-build packages dist/ as it is (a warning when stale, an error when something is missing).
import { findJdkHome } from './buildJvmAgent.mjs';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const noBuild = argv.includes('--no-build');
const outIdx = argv.indexOf('--out');
const buildFlags = argv.filter((a, i) => a.startsWith('--skip-') && (outIdx < 0 || i !== outIdx + 1));
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const out = outIdx >= 0 ? path.resolve(argv[outIdx + 1] ?? '') : path.join(root, `${manifest.name}-${manifest.version}.vsix`);
const vsce = path.join(root, 'node_modules', '.bin', 'vsce');

function fail(msg) {
  console.error(`package: ${msg}`);
  process.exit(1);
}
const rel = (p) => path.relative(root, p);
const exists = (p) => fs.existsSync(path.join(root, p));

/**
 * Everything the installed extension needs from dist/, derived from the sources that produce it,
 * each with the sources it is built from. Staleness is judged per output: the build skips BPF
 * objects whose sources did not change, so an old .bpf.o says nothing about whether the TypeScript
 * bundles (rewritten on every build) are current.
 */
function requiredOutputs() {
  const ts = ['extension', 'webview'];
  const need = [
    { file: 'dist/extension.js', from: ts },
    { file: 'dist/helper.js', from: ts },
    { file: 'dist/cli.js', from: ts },
    { file: 'dist/runner.js', from: ts },
    { file: 'dist/profileWorker.js', from: ts },
    { file: 'dist/webview/common.css', from: ['webview'] },
  ];
  if (exists('native/binding.gyp')) need.push({ file: 'dist/ebpf_studio.node', from: ['native/src', 'native/binding.gyp'] });
  if (exists('extension/lsp/server.ts')) need.push({ file: 'dist/server.js', from: ts });
  if (exists('native/preload')) need.push({ file: 'dist/libebpf-studio-preload.so', from: ['native/preload'] });
  if (exists('native/inject/inject.c')) need.push({ file: 'dist/ebpf-studio-inject', from: ['native/inject'] });
  if (exists('native/jvmagent/agent.c') && findJdkHome()) need.push({ file: 'dist/libebpf-studio-jvmagent.so', from: ['native/jvmagent'] });
  if (exists('native/javalatency') && fs.existsSync(path.join(root, 'dist/ebpf-studio-javalatency.jar'))) need.push({ file: 'dist/ebpf-studio-javalatency.jar', from: ['native/javalatency'] });
  // As scripts/build.mjs decides: an object is rebuilt from its own source and the headers in bpf/.
  const bpfFiles = fs.readdirSync(path.join(root, 'bpf'));
  const headers = bpfFiles.filter((f) => f.endsWith('.h')).map((f) => `bpf/${f}`);
  for (const f of bpfFiles) if (f.endsWith('.bpf.c')) need.push({ file: `dist/bpf/${f.replace(/\.c$/, '.o')}`, from: [`bpf/${f}`, ...headers] });
  for (const v of fs.readdirSync(path.join(root, 'webview'))) if (exists(`webview/${v}/main.ts`)) need.push({ file: `dist/webview/${v}.js`, from: ts });
  return need;
}

function newestMtime(dir) {
  let newest = 0;
  const abs = path.join(root, dir);
  if (!fs.existsSync(abs)) return 0;
  const st = fs.statSync(abs);
  if (!st.isDirectory()) return st.mtimeMs;
  for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'build') continue;
    newest = Math.max(newest, newestMtime(path.join(dir, e.name)));
  }
  return newest;
}

function staleness() {
  const need = requiredOutputs();
  const missing = need.filter((o) => !exists(o.file)).map((o) => o.file);
  if (missing.length) return `missing ${missing.join(', ')}`;
  const newest = new Map();
  const newer = new Set();
  for (const o of need) {
    const built = fs.statSync(path.join(root, o.file)).mtimeMs;
    for (const d of o.from) {
      if (!newest.has(d)) newest.set(d, newestMtime(d));
      if (newest.get(d) > built) newer.add(d);
    }
  }
  return newer.size ? `sources changed since the last build (${[...newer].join(', ')})` : undefined;
}

function run(cmd, args, opts = {}) {
  // stdin closed: vsce asks y/N questions on missing fields; answer none rather than hang in CI.
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  if (r.error) fail(`${path.basename(cmd)}: ${r.error.message}`);
  if (r.status !== 0) fail(`${path.basename(cmd)} ${args.join(' ')} exited with ${r.status}`);
  return r;
}

if (!fs.existsSync(vsce)) fail('node_modules/.bin/vsce not found: run `npm install` (it is the @vscode/vsce dev dependency)');
for (const f of ['README.md', 'LICENSE', 'package.json']) if (!exists(f)) fail(`${f} is missing; the .vsix needs it (Marketplace page, license)`);

const why = staleness();
if (why && noBuild) {
  // --no-build packages what is built (the editor tests do this after CI's build); only a hole is fatal.
  if (why.startsWith('missing')) fail(`dist/ is not ready (${why}); run \`npm run build\``);
  console.warn(`package: warning: packaging dist/ as built, but ${why}`);
} else if (why) {
  console.log(`package: building first: ${why}`);
  run(process.execPath, [path.join(root, 'scripts', 'build.mjs'), ...buildFlags]);
  const still = staleness();
  if (still) fail(`build finished but dist/ is still not ready: ${still}`);
}

// What vsce would pack, checked against the allow-list so a stray file fails here, not in review.
const ls = spawnSync(vsce, ['ls', '--no-dependencies'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (ls.status !== 0) fail(`vsce ls exited with ${ls.status}`);
const files = ls.stdout.split('\n').map((s) => s.trim()).filter(Boolean);
const allowed = [/^package\.json$/, /^README\.md$/, /^LICENSE$/, /^CHANGELOG\.md$/, /^bin\//, /^media\//, /^syntaxes\//, /^snippets\//,
  /^dist\/[^/]+\.js$/, /^dist\/bpf\/[^/]+\.bpf\.o$/, /^dist\/ebpf_studio\.node$/, /^dist\/ebpf-studio-launch$/, /^dist\/libebpf-studio-preload\.so$/, /^dist\/ebpf-studio-inject$/, /^dist\/libebpf-studio-jvmagent\.so$/, /^dist\/ebpf-studio-javalatency\.jar$/, /^dist\/webview\/[^/]+\.(js|css)$/];
const stray = files.filter((f) => !allowed.some((re) => re.test(f)) || f.endsWith('.map') || f.endsWith('.ts'));
if (stray.length) fail(`files outside the allow-list would be packed (fix .vscodeignore):\n  ${stray.join('\n  ')}`);
const absent = requiredOutputs().map((o) => o.file).filter((f) => !files.includes(f));
if (absent.length) fail(`.vscodeignore leaves out files the extension needs:\n  ${absent.join('\n  ')}`);

fs.rmSync(out, { force: true });
// Relative README links stay relative: there is no public repository to point them at, and VS Code
// resolves them inside the installed extension, which carries media/.
run(vsce, ['package', '--no-dependencies', '--no-rewrite-relative-links', '--out', out]);
const size = fs.statSync(out).size;
console.log(`package: ${rel(out)}: ${(size / 1024).toFixed(0)} KiB, ${files.length} extension files`);
