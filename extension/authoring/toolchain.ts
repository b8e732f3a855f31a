// Runs the BPF toolchain for the build task, Load and Verify and the CLI: finds clang and
// bpftool, generates vmlinux.h from the running kernel's BTF (cached per kernel), compiles a
// .bpf.c with buildCommand's flags, and checks that a file is a BPF ELF object. No vscode here.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inputError, StudioError } from '../protocol/errors';
import { isElfHead, readRegularFileHead } from '../sys/elf/fileCheck';
import { explainClangMessage } from './unresolvedFunctions';
import { archInfo, buildCommand, parseClangDiagnostics, skeletonPath, type ClangDiagnostic } from './buildCommand';

const SBIN = ['/usr/sbin', '/sbin', '/usr/local/sbin'];

/** Absolute path of a tool on PATH (or in sbin, where Debian puts bpftool), else undefined. */
export function findTool(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), ...SBIN];
  for (const d of dirs) {
    const p = path.join(d, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

export function requireClang(): string {
  const clang = process.env.EBPF_STUDIO_CLANG || findTool('clang');
  if (!clang) throw new StudioError('unsuitable', 'clang is not installed, and it compiles BPF programs. Install it with: sudo apt-get install -y clang llvm libbpf-dev');
  return clang;
}

export function requireBpftool(): string {
  const t = findTool('bpftool');
  if (!t) throw new StudioError('unsuitable', 'bpftool is not installed; it generates vmlinux.h and skeletons. Install it with: sudo apt-get install -y bpftool');
  return t;
}

export const KERNEL_BTF = '/sys/kernel/btf/vmlinux';

/** Default cache for the CLI: $XDG_CACHE_HOME/ebpf-studio (the extension uses its global storage). */
export function defaultCacheDir(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ebpf-studio');
}

/**
 * Returns the folder holding vmlinux.h for the running kernel under `cacheDir`, generating it
 * with bpftool when missing or made for another kernel (keyed by release and BTF size).
 */
export async function ensureVmlinux(cacheDir: string): Promise<string> {
  if (!fs.existsSync(KERNEL_BTF)) {
    throw new StudioError('unsuitable', `${KERNEL_BTF} is missing: this kernel has no BTF, which CO-RE programs need (CONFIG_DEBUG_INFO_BTF=y). Use a kernel with BTF, or pass a vmlinux.h with -I.`);
  }
  const key = `${os.release()}-${fs.statSync(KERNEL_BTF).size}`;
  const dir = path.join(cacheDir, 'vmlinux', key.replace(/[^\w.-]/g, '_'));
  const file = path.join(dir, 'vmlinux.h');
  if (fs.existsSync(file) && fs.statSync(file).size > 0) return dir;
  const bpftool = requireBpftool();
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await new Promise<void>((resolve, reject) => {
    const out = fs.createWriteStream(tmp);
    const child = spawn(bpftool, ['btf', 'dump', 'file', KERNEL_BTF, 'format', 'c'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stdout.pipe(out);
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      out.close(() => (code === 0 ? resolve() : reject(new StudioError('internal', `bpftool btf dump failed (exit ${code}): ${err.trim()}`))));
    });
  });
  fs.renameSync(tmp, file);
  return dir;
}

export interface CompileResult {
  ok: boolean;
  output: string;
  command: string[];
  stderr: string;
  diagnostics: ClangDiagnostic[];
}

export function checkSource(source: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(source);
  } catch {
    throw inputError(`${source} does not exist: give the path of a .bpf.c file`);
  }
  if (!st.isFile()) throw inputError(`${source} is not a regular file: give the path of a .bpf.c file`);
  if (st.size === 0) throw inputError(`${source} is empty: write a BPF program first (try the "bpf-" snippets)`);
}

export async function compileBpf(source: string, output: string, vmlinuxDir: string, opts: { includeDirs?: string[] } = {}): Promise<CompileResult> {
  const arch = archInfo(os.arch());
  if (!arch) throw new StudioError('unsuitable', `building BPF on ${os.arch()} is not supported (x64, arm64, s390x, ppc64, riscv64 are)`);
  const cmd = buildCommand({ source: path.resolve(source), output, vmlinuxDir, arch, includeDirs: opts.includeDirs, clang: requireClang() });
  fs.mkdirSync(path.dirname(output), { recursive: true });
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', (e) => reject(new StudioError('unsuitable', `could not run ${cmd.command}: ${e.message}. Install clang: sudo apt-get install -y clang`)));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  // An undeclared function (a helper typo) gets its cause and the closest helper in the message.
  const diagnostics = parseClangDiagnostics(r.stderr).map((d) => ({ ...d, message: explainClangMessage(d.message) }));
  return { ok: r.code === 0, output, command: [cmd.command, ...cmd.args], stderr: r.stderr, diagnostics };
}

/** bpftool gen skeleton OBJ > X.skel.h; returns the header's path. */
export function generateSkeleton(object: string): string {
  const out = skeletonPath(object);
  const r = spawnSync(requireBpftool(), ['gen', 'skeleton', object], { maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new StudioError('internal', `bpftool gen skeleton ${object} failed: ${r.stderr.toString().trim()}`);
  fs.writeFileSync(out, r.stdout);
  return out;
}

const EM_BPF = 247;

/** Throws an input error naming the problem unless `file` is a non-empty ELF object for the BPF machine. */
export function checkBpfObject(file: string): void {
  const { head } = readRegularFileHead(file, 20, 'object file', 'rebuild it (ebpf-studio build SOURCE.bpf.c)');
  if (!isElfHead(head) || head.length < 20) throw inputError(`${file} is not an ELF object file: give a .bpf.o built with clang -target bpf, or the .bpf.c source`);
  const machine = head[5] === 1 ? head.readUInt16LE(18) : head.readUInt16BE(18);
  if (machine !== EM_BPF) throw inputError(`${file} is an ELF file for another machine (e_machine ${machine}), not BPF: compile with clang -target bpf`);
}
