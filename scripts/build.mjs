#!/usr/bin/env node
// One build: toolchain check → vmlinux.h → bpf/*.bpf.c → native addon → esbuild bundles → tsc.
// Usage: node scripts/build.mjs [--skip-native] [--skip-bpf] [--skip-typecheck] [--watch]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { buildJvmAgent } from './buildJvmAgent.mjs';
import { buildJavaLatency } from './buildJavaLatency.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const dist = path.join(root, 'dist');
const buildDir = path.join(root, 'build');

function fail(msg) {
  console.error(`build: ${msg}`);
  process.exit(1);
}
function run(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { stdio: 'inherit', cwd: root, ...opts });
  if (r.error) fail(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`${cmd} ${argv.join(' ')} exited with ${r.status}`);
}
function have(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

// Each missing piece names the Debian package that provides it.
function checkToolchain() {
  const missing = [];
  const tools = [
    ['clang', 'clang'],
    ['llvm-strip', 'llvm'],
    ['make', 'make'],
    ['g++', 'g++'],
    ['strip', 'binutils'],
  ];
  for (const [bin, pkg] of tools) if (!have(bin)) missing.push(`${bin} (apt-get install ${pkg})`);
  if (!have('bpftool') && !fs.existsSync('/usr/sbin/bpftool')) missing.push('bpftool (apt-get install bpftool)');
  const headers = [
    ['/usr/include/bpf/bpf_helpers.h', 'libbpf-dev'],
    ['/usr/include/gelf.h', 'libelf-dev'],
    ['/usr/include/elfutils/libdwfl.h', 'libdw-dev'],
    ['/usr/include/zlib.h', 'zlib1g-dev'],
  ];
  for (const [file, pkg] of headers) if (!fs.existsSync(file)) missing.push(`${file} (apt-get install ${pkg})`);
  if (missing.length) {
    fail(`missing build tools:\n  ${missing.join('\n  ')}\nInstall them with: sudo apt-get install -y clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev make g++`);
  }
  if (!fs.existsSync('/sys/kernel/btf/vmlinux')) {
    fail('this kernel exposes no BTF (/sys/kernel/btf/vmlinux is missing). CO-RE BPF programs need a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian and Ubuntu kernels since 2021 have it).');
  }
}

function bpftool() {
  return have('bpftool') ? 'bpftool' : '/usr/sbin/bpftool';
}

function archDefine() {
  const a = os.arch();
  if (a === 'x64') return ['x86', 'x86_64-linux-gnu'];
  if (a === 'arm64') return ['arm64', 'aarch64-linux-gnu'];
  fail(`unsupported architecture ${a}`);
}

export function bpfCflags(includeDirs = []) {
  const [arch, multiarch] = archDefine();
  return [
    '-O2', '-g', '-target', 'bpf', `-D__TARGET_ARCH_${arch}`,
    `-I${buildDir}`, `-I${path.join(root, 'bpf')}`, `-I/usr/include/${multiarch}`,
    ...includeDirs.map((d) => `-I${d}`),
    '-Wall', '-Wno-unused-function', '-Werror=implicit-function-declaration',
  ];
}

function buildBpf() {
  fs.mkdirSync(buildDir, { recursive: true });
  const vmlinux = path.join(buildDir, 'vmlinux.h');
  if (!fs.existsSync(vmlinux) || fs.statSync(vmlinux).size === 0) {
    const r = spawnSync(bpftool(), ['btf', 'dump', 'file', '/sys/kernel/btf/vmlinux', 'format', 'c'], { maxBuffer: 1 << 30 });
    if (r.status !== 0) fail(`bpftool btf dump failed: ${r.stderr}`);
    fs.writeFileSync(vmlinux, r.stdout);
  }
  const outDir = path.join(dist, 'bpf');
  fs.mkdirSync(outDir, { recursive: true });
  const sources = fs.readdirSync(path.join(root, 'bpf')).filter((f) => f.endsWith('.bpf.c'));
  // Rebuild an object when its source or any header in bpf/ is newer (headers are few).
  const headers = fs.readdirSync(path.join(root, 'bpf')).filter((f) => f.endsWith('.h')).map((f) => fs.statSync(path.join(root, 'bpf', f)).mtimeMs);
  const newestHeader = Math.max(0, fs.statSync(vmlinux).mtimeMs, ...headers);
  for (const src of sources) {
    const out = path.join(outDir, src.replace(/\.c$/, '.o'));
    const srcPath = path.join(root, 'bpf', src);
    if (fs.existsSync(out) && fs.statSync(out).mtimeMs > Math.max(newestHeader, fs.statSync(srcPath).mtimeMs)) continue;
    // DWARF is dropped (BTF and its line info stay): a tenth of the size, same programs.
    const tmp = `${out}.tmp`;
    run('clang', [...bpfCflags(), '-c', srcPath, '-o', tmp]);
    run('llvm-strip', ['-g', tmp]);
    fs.renameSync(tmp, out);
  }
  console.log(`build: ${sources.length} BPF objects → dist/bpf/`);
}

// libbpf goes inside the addon when a position-independent libbpf.a can be had (Debian's is
// not PIC; scripts/build-libbpf.sh builds one from the source package, cached); otherwise the
// addon links the system libbpf.so.1 and says so.
function libbpfArchive() {
  if (process.env.LIBBPF_A) return process.env.LIBBPF_A;
  const r = spawnSync('bash', [path.join(root, 'scripts', 'build-libbpf.sh')], { encoding: 'utf8' });
  if (r.status === 0) return r.stdout.trim();
  console.warn(`build: warning: linking libbpf dynamically (libbpf.so.1 needed at run time): ${r.stderr.trim()}`);
  return '';
}

function buildNative() {
  const gyp = path.join(root, 'node_modules', '.bin', 'node-gyp');
  if (!fs.existsSync(path.join(root, 'native', 'binding.gyp'))) return;
  const libbpfA = libbpfArchive();
  const stamp = path.join(root, 'native', 'build', '.libbpf');
  // Incremental once configured: `node-gyp build` reruns make only for changed sources; a change
  // of libbpf linkage needs a fresh configure.
  const configured = fs.existsSync(path.join(root, 'native', 'build', 'Makefile')) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === libbpfA;
  // Offline machines cannot download Node headers: use the installed ones when they match.
  const nodedir = !process.env.npm_config_nodedir && fs.existsSync('/usr/include/node/node_api.h') ? ['--nodedir=/usr'] : [];
  run(gyp, [configured ? 'build' : 'rebuild', '--silent', ...nodedir], { cwd: path.join(root, 'native'), env: { ...process.env, LIBBPF_A: libbpfA } });
  fs.writeFileSync(stamp, libbpfA);
  console.log(`build: libbpf ${libbpfA ? `linked statically from ${libbpfA}` : 'linked dynamically'}`);
  fs.mkdirSync(dist, { recursive: true });
  // Replace by rename, never in place: a running CLI or helper has the old file mapped, and
  // rewriting a mapped shared object crashes it.
  const install = (from, name, strip) => {
    const to = path.join(dist, name);
    const tmp = `${to}.tmp${process.pid}`;
    fs.copyFileSync(from, tmp);
    if (strip) run('strip', ['--strip-debug', tmp]);
    fs.renameSync(tmp, to);
  };
  install(path.join(root, 'native', 'build', 'Release', 'ebpf_studio.node'), 'ebpf_studio.node', true);
  const launcher = path.join(root, 'native', 'build', 'Release', 'ebpf-studio-launch');
  if (fs.existsSync(launcher)) install(launcher, 'ebpf-studio-launch', false);
  console.log('build: native addon → dist/ebpf_studio.node');
}

// The leak-tracing interposer (native/preload): a plain C shared library, so gcc directly rather
// than node-gyp (which builds it into lib.target/ with the addon's flags). -fexceptions: a C++
// exception from operator new passes through its wrappers.
function buildPreload() {
  const src = path.join(root, 'native', 'preload', 'ebpf_studio_preload.c');
  if (!fs.existsSync(src)) return;
  const out = path.join(dist, 'libebpf-studio-preload.so');
  const inputs = fs.readdirSync(path.dirname(src)).map((f) => fs.statSync(path.join(path.dirname(src), f)).mtimeMs);
  if (fs.existsSync(out) && fs.statSync(out).mtimeMs > Math.max(...inputs)) return;
  fs.mkdirSync(dist, { recursive: true });
  // Replaced by rename: running programs may have the old one mapped.
  const tmp = `${out}.tmp${process.pid}`;
  run('gcc', ['-O2', '-g', '-fPIC', '-shared', '-fexceptions', '-fvisibility=hidden', '-ftls-model=initial-exec', '-Wall', '-Wextra', '-o', tmp, src, '-ldl', '-lpthread', '-lm']);
  run('strip', ['--strip-debug', tmp]);
  fs.renameSync(tmp, out);
  console.log('build: leak interposer → dist/libebpf-studio-preload.so');
}

// Its injector (native/inject): loads the interposer into a running process (memleak --mode inject).
function buildInjector() {
  const src = path.join(root, 'native', 'inject', 'inject.c');
  if (!fs.existsSync(src)) return;
  const out = path.join(dist, 'ebpf-studio-inject');
  if (fs.existsSync(out) && fs.statSync(out).mtimeMs > fs.statSync(src).mtimeMs) return;
  fs.mkdirSync(dist, { recursive: true });
  const tmp = `${out}.tmp${process.pid}`;
  run('gcc', ['-O2', '-g', '-Wall', '-Wextra', '-o', tmp, src]);
  run('strip', ['--strip-debug', tmp]);
  fs.renameSync(tmp, out);
  console.log('build: leak injector → dist/ebpf-studio-inject');
}

async function bundle() {
  const esbuild = await import('esbuild');
  const common = { bundle: true, sourcemap: 'linked', logLevel: 'warning', minify: false, target: 'es2022' };
  const node = { ...common, platform: 'node', format: 'cjs', target: 'node20' };
  const entries = [
    { entryPoints: { extension: 'extension/extension.ts' }, external: ['vscode'] },
    { entryPoints: { helper: 'extension/helper/main.ts' } },
    { entryPoints: { runner: 'extension/runner/main.ts' } },
    { entryPoints: { cli: 'extension/cli/main.ts' } },
    // profile files are read in a worker thread (extension/sys/profileReader.ts), by the extension and the CLI
    { entryPoints: { profileWorker: 'extension/sys/profileWorker.ts' } },
    // JFR recordings are read in a worker thread too (extension/sys/jfrReader.ts), by the extension
    { entryPoints: { jfrWorker: 'extension/sys/jfrWorker.ts' } },
    // stops a JFR recording of ours whose session was killed (extension/sys/jvm/recordingGuard.ts)
    { entryPoints: { jfrGuard: 'extension/sys/jvm/jfrGuard.ts' } },
  ];
  if (fs.existsSync(path.join(root, 'extension/lsp/server.ts'))) entries.push({ entryPoints: { server: 'extension/lsp/server.ts' } });
  const jobs = entries.map((e) => esbuild.build({ ...node, ...e, outdir: dist, absWorkingDir: root }));
  // Every webview/<view>/main.ts becomes dist/webview/<view>.js (browser, iife).
  const webRoot = path.join(root, 'webview');
  for (const view of fs.readdirSync(webRoot)) {
    const main = path.join(webRoot, view, 'main.ts');
    if (!fs.existsSync(main)) continue;
    jobs.push(esbuild.build({ ...common, platform: 'browser', format: 'iife', entryPoints: { [view]: main }, outdir: path.join(dist, 'webview'), absWorkingDir: root }));
  }
  await Promise.all(jobs);
  fs.mkdirSync(path.join(dist, 'webview'), { recursive: true });
  for (const f of fs.readdirSync(webRoot)) if (f.endsWith('.css')) fs.copyFileSync(path.join(webRoot, f), path.join(dist, 'webview', f));
  console.log('build: bundles → dist/');
}

checkToolchain();
fs.mkdirSync(dist, { recursive: true });
if (!args.has('--skip-bpf')) buildBpf();
if (!args.has('--skip-native')) buildNative();
if (!args.has('--skip-native')) buildPreload();
if (!args.has('--skip-native')) buildInjector();
if (!args.has('--skip-native')) buildJvmAgent(root, dist);
if (!args.has('--skip-native')) buildJavaLatency(root, dist);
await bundle();
if (!args.has('--skip-typecheck')) run(process.execPath, [path.join(root, 'node_modules', 'tsgo', 'bin', 'tsc'), '--noEmit', '-p', '.']);
console.log('build: done');
