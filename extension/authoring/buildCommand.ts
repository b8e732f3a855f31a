// The clang command line for a CO-RE BPF object, shared by the "ebpf: build" task and the
// `ebpf-studio build` CLI so both compile exactly alike. Pure: no file system, no spawning.
import path from 'node:path';

export interface ArchInfo {
  /** value of __TARGET_ARCH_<x> that bpf_tracing.h expects */
  targetArch: string;
  /** Debian multiarch triple: /usr/include/<triple> holds asm/ headers that usdt.bpf.h needs */
  multiarch: string;
}

/** Maps node's os.arch() to the BPF target define and multiarch include folder; undefined if unsupported. */
export function archInfo(nodeArch: string): ArchInfo | undefined {
  switch (nodeArch) {
    case 'x64':
      return { targetArch: 'x86', multiarch: 'x86_64-linux-gnu' };
    case 'arm64':
      return { targetArch: 'arm64', multiarch: 'aarch64-linux-gnu' };
    case 's390x':
      return { targetArch: 's390', multiarch: 's390x-linux-gnu' };
    case 'ppc64':
      return { targetArch: 'powerpc', multiarch: 'powerpc64le-linux-gnu' };
    case 'riscv64':
      return { targetArch: 'riscv', multiarch: 'riscv64-linux-gnu' };
    default:
      return undefined;
  }
}

export interface BuildSpec {
  source: string;
  output: string;
  /** folder holding the generated vmlinux.h */
  vmlinuxDir: string;
  arch: ArchInfo;
  includeDirs?: string[];
  defines?: string[];
  clang?: string;
}

export interface CommandLine {
  command: string;
  args: string[];
}

export function bpfClangArgs(spec: Omit<BuildSpec, 'source' | 'output' | 'clang'>): string[] {
  return [
    '-O2',
    '-g',
    '-target',
    'bpf',
    `-D__TARGET_ARCH_${spec.arch.targetArch}`,
    ...(spec.defines ?? []).map((d) => `-D${d}`),
    `-I${spec.vmlinuxDir}`,
    ...(spec.includeDirs ?? []).map((d) => `-I${d}`),
    `-I/usr/include/${spec.arch.multiarch}`,
    // Absolute paths in diagnostics let the $ebpf-clang problem matcher find files from any cwd.
    '-fdiagnostics-absolute-paths',
    '-fno-color-diagnostics',
    '-Wall',
    '-Wno-unused-function',
    // A misspelt helper is otherwise only a warning, and the object then fails to load with a
    // misleading "failed to find BTF for extern" from libbpf.
    '-Werror=implicit-function-declaration',
  ];
}

export function buildCommand(spec: BuildSpec): CommandLine {
  return { command: spec.clang ?? 'clang', args: [...bpfClangArgs(spec), '-c', spec.source, '-o', spec.output] };
}

/** foo.bpf.c → foo.bpf.o in outDir (or next to the source). */
export function defaultOutput(source: string, outDir?: string): string {
  const base = path.basename(source).replace(/\.c$/, '') + '.o';
  return path.join(outDir ?? path.dirname(source), base);
}

/** bpftool gen skeleton X.bpf.o > X.skel.h: the skeleton name is the object's base name without .bpf.o. */
export function skeletonPath(object: string): string {
  return object.replace(/(\.bpf)?\.o$/, '') + '.skel.h';
}

export interface ClangDiagnostic {
  file: string;
  line: number;
  column: number;
  severity: 'error' | 'warning' | 'note';
  message: string;
}

/** Parses clang's "file:line:col: error: message" lines (the same pattern the $ebpf-clang matcher uses). */
export function parseClangDiagnostics(stderr: string): ClangDiagnostic[] {
  const out: ClangDiagnostic[] = [];
  for (const line of stderr.split('\n')) {
    const m = /^(.+?):(\d+):(\d+):\s+(?:fatal\s+)?(error|warning|note):\s+(.*)$/.exec(line);
    if (m) out.push({ file: m[1], line: Number(m[2]), column: Number(m[3]), severity: m[4] as ClangDiagnostic['severity'], message: m[5] });
  }
  return out;
}
