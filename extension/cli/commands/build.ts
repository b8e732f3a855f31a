// `ebpf-studio build FILE.bpf.c [-o OUT] [-I DIR]... [--skeleton]`: compiles a BPF program with the
// same flags as the editor's "ebpf: build" task (vmlinux.h generated for the running kernel), and
// records that command in ./compile_commands.json for clangd.
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from '../command';
import { parse } from '../args';
import { usageError, inputError } from '../../protocol/errors';
import { defaultOutput } from '../../authoring/buildCommand';
import { updateCompileCommands, entryFor } from '../../authoring/compileCommands';
import { checkSource, compileBpf, defaultCacheDir, ensureVmlinux, generateSkeleton } from '../../authoring/toolchain';

const options = {
  output: { type: 'string', short: 'o' },
  include: { type: 'string', short: 'I', multiple: true },
  skeleton: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export function sourceArg(positionals: string[], usage: string): string {
  if (positionals.length !== 1) throw usageError(positionals.length ? `give one file, got ${positionals.length}` : 'give the BPF source file to build');
  const src = positionals[0];
  checkSource(src);
  const head = Buffer.alloc(4);
  const fd = fs.openSync(src, 'r');
  fs.readSync(fd, head, 0, 4, 0);
  fs.closeSync(fd);
  if (head.readUInt32BE(0) === 0x7f454c46) throw inputError(`${src} is already an ELF object, not C source (${usage})`);
  // clang takes any other name for a linker input: it would compile nothing and exit 0.
  if (!/\.c$/.test(src)) throw inputError(`${src} is not C source: give a file whose name ends in .c, e.g. prog.bpf.c (${usage})`);
  return src;
}

export const buildCommand: Command = {
  name: 'build',
  summary: 'compile a .bpf.c with clang -target bpf and a vmlinux.h of this kernel',
  usage: 'ebpf-studio build FILE.bpf.c [-o OUT.bpf.o] [-I DIR]... [--skeleton] [--json]',
  async run(argv, io) {
    const { values, positionals } = parse(argv, options, true);
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    const src = sourceArg(positionals, this.usage);
    const out = path.resolve((values.output as string | undefined) ?? defaultOutput(src));
    const vmlinuxDir = await ensureVmlinux(defaultCacheDir());
    const r = await compileBpf(src, out, vmlinuxDir, { includeDirs: (values.include as string[] | undefined) ?? [] });
    const skeleton = r.ok && values.skeleton ? generateSkeleton(out) : undefined;
    // Written even when clang fails: that is when clangd's view of the file matters most.
    let compileCommands: string | undefined;
    try {
      compileCommands = updateCompileCommands(process.cwd(), [entryFor(r.command, path.resolve(src), out, process.cwd())]);
    } catch (e) {
      io.err(`ebpf-studio build: warning: compile_commands.json not updated: ${(e as Error).message}`);
    }
    if (values.json) io.out(JSON.stringify({ ok: r.ok, output: r.ok ? out : undefined, skeleton, compileCommands, command: r.command, diagnostics: r.diagnostics, stderr: r.stderr }, null, 2));
    else {
      if (r.stderr.trim()) io.err(r.stderr.trimEnd());
      if (r.ok) io.out(`built ${out}${skeleton ? `\nskeleton ${skeleton}` : ''}`);
      else io.err(`ebpf-studio build: clang failed on ${src} (${r.diagnostics.filter((d) => d.severity === 'error').length} errors)`);
    }
    return r.ok ? 0 : 1;
  },
};
