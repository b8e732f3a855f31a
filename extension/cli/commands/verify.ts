// `ebpf-studio verify FILE.bpf.c|FILE.bpf.o [--json]`: loads the object into the kernel without
// attaching it and reports what the verifier rejected, on the source line it came from.
// A .bpf.c is built into a temporary folder first. Exit 0 verified, 1 rejected or failed to compile.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from '../command';
import { parse } from '../args';
import { inputError, usageError } from '../../protocol/errors';
import { requireBpfPrivilege } from '../env';
import { defaultAssetDir, loadAddon } from '../../sys/addon';
import { checkBpfObject, compileBpf, defaultCacheDir, ensureVmlinux } from '../../authoring/toolchain';
import { siblingSources, verifyObject } from '../../authoring/verifyObject';
import type { VerifyResponse } from '../../protocol/authoring';
import { defaultOutput } from '../../authoring/buildCommand';
import { formatStats } from '../../authoring/verifierLog';

function isElf(file: string): boolean {
  const head = Buffer.alloc(4);
  const fd = fs.openSync(file, 'r');
  try {
    return fs.readSync(fd, head, 0, 4, 0) === 4 && head.readUInt32BE(0) === 0x7f454c46;
  } finally {
    fs.closeSync(fd);
  }
}

function formatText(r: VerifyResponse): string {
  if (r.ok) return `verified: the kernel accepted every program${r.stats?.length ? `\n${formatStats(r.stats)}` : ''}`;
  const parts = r.diagnostics.map((d) => `${d.file}:${d.line}:${d.column}: error: ${d.message}${d.program ? ` [program ${d.program}]` : ''}${d.hint ? `\n  hint: ${d.hint}` : ''}\n${d.excerpt.replace(/^/gm, '    ')}`);
  const unresolved = r.diagnostics.every((d) => d.message.startsWith('unresolved function'));
  return `${parts.join('\n\n')}\n${unresolved ? 'not loaded: libbpf could not resolve every function the program calls' : 'rejected by the verifier'} (full log: --json, field "log")`;
}

export const verifyCommand: Command = {
  name: 'verify',
  summary: 'load a BPF program without attaching it and map verifier errors to source lines',
  usage: 'ebpf-studio verify FILE.bpf.c|FILE.bpf.o [-I DIR]... [--json]',
  async run(argv, io) {
    const { values, positionals } = parse(argv, { json: { type: 'boolean' }, include: { type: 'string', short: 'I', multiple: true }, help: { type: 'boolean', short: 'h' } }, true);
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    if (positionals.length !== 1) throw usageError(positionals.length ? `give one file, got ${positionals.length}` : 'give a .bpf.c source or a .bpf.o object');
    const file = positionals[0];
    if (!fs.existsSync(file)) throw inputError(`${file} does not exist`);
    if (!fs.statSync(file).isFile()) throw inputError(`${file} is not a regular file`);
    if (fs.statSync(file).size === 0) throw inputError(`${file} is empty: give a .bpf.c source or a .bpf.o object built with clang -target bpf`);
    const elf = isElf(file);
    if (elf) checkBpfObject(file);
    else if (!/\.(c|h)$/.test(file)) throw inputError(`${file} is neither an ELF object nor C source: give a .bpf.c source or a .bpf.o object built with clang -target bpf`);
    requireBpfPrivilege('bpf');
    let object = file;
    let sources = elf ? siblingSources(path.resolve(file)) : [];
    let tmp: string | undefined;
    try {
      if (!elf) {
        tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-verify-'));
        object = defaultOutput(file, tmp);
        const c = await compileBpf(file, object, await ensureVmlinux(defaultCacheDir()), { includeDirs: (values.include as string[] | undefined) ?? [] });
        if (!c.ok) {
          const diagnostics = c.diagnostics.filter((d) => d.severity !== 'note');
          if (values.json) io.out(JSON.stringify({ ok: false, diagnostics, log: c.stderr }, null, 2));
          else {
            // clang's own output, then each undeclared function named with its likely fix.
            const explained = diagnostics.filter((d) => d.message.includes(' — ')).map((d) => `${d.file}:${d.line}:${d.column}: ${d.message.slice(d.message.indexOf(' — ') + 3)}`);
            io.err(`${c.stderr.trimEnd()}${explained.length ? `\n${explained.join('\n')}` : ''}\nebpf-studio verify: ${file} does not compile, so it was not loaded`);
          }
          return 1;
        }
        sources = siblingSources(path.resolve(file), [path.resolve(file)]);
      }
      const r = verifyObject(loadAddon(defaultAssetDir()), object, sources);
      const diagnostics = r.diagnostics.map((d) => ({ file: d.file, line: d.line, column: d.column, severity: d.severity, message: d.message, hint: d.hint, program: d.program, excerpt: d.excerpt }));
      if (values.json) io.out(JSON.stringify({ ok: r.ok, diagnostics, log: r.log, stats: r.stats }, null, 2));
      else (r.ok ? io.out : io.err)(formatText(r));
      return r.ok ? 0 : 1;
    } finally {
      if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    }
  },
};
