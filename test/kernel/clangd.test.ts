// clangd sees BPF code as the build does: `ebpf-studio build` records its clang command in
// ./compile_commands.json (merged with the project's own entries), after which Debian's clangd
// reports zero errors on a SEC("tp/...") program that includes vmlinux.h, and exactly one for a
// real typo. Needs no root, only the kernel's BTF (for vmlinux.h), bpftool, clang and clangd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliJs } from '../helpers';
import { findTool } from '../../extension/authoring/toolchain';

const clangd = findTool('clangd');
const skip = !fs.existsSync(cliJs)
  ? 'dist/cli.js is not built: run npm run build'
  : !clangd
    ? 'clangd is not installed (apt-get install clangd)'
    : !fs.existsSync('/sys/kernel/btf/vmlinux')
      ? 'the kernel has no BTF, so no vmlinux.h can be generated'
      : undefined;

const PROGRAM = `#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";
__u64 exec_count;

SEC("tp/syscalls/sys_enter_execve")
int count_exec(struct trace_event_raw_sys_enter *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (pid && ctx->id >= 0)
		__sync_fetch_and_add(&exec_count, 1);
	return 0;
}
`;

/** clangd --check's error lines ("E[time] [code] Line N: message"). */
function clangdErrors(dir: string, file: string): string[] {
  const r = spawnSync(clangd!, [`--check=${file}`], { cwd: dir, encoding: 'utf8', timeout: 240_000 });
  const lines = `${r.stdout}\n${r.stderr}`.split('\n');
  assert.ok(lines.some((l) => /All checks completed/.test(l)), `clangd did not finish: ${r.stderr.slice(-2000)}`);
  return lines.filter((l) => /^E\[[\d:.]+\] \[/.test(l));
}

test('after ebpf-studio build, clangd has zero errors on a tracepoint program with vmlinux.h and one for a typo', { timeout: 600_000 }, (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-clangd-'));
  const src = path.join(dir, 'execcount.bpf.c');
  fs.writeFileSync(src, PROGRAM);
  // The project's own entry must survive our merge.
  const own = { directory: dir, file: 'main.c', arguments: ['cc', '-c', 'main.c'] };
  fs.writeFileSync(path.join(dir, 'compile_commands.json'), JSON.stringify([own]));

  const r = spawnSync(process.execPath, [cliJs, 'build', 'execcount.bpf.c', '--json'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const built = JSON.parse(r.stdout) as { command: string[]; compileCommands: string };
  assert.equal(built.compileCommands, path.join(dir, 'compile_commands.json'));
  const db = JSON.parse(fs.readFileSync(built.compileCommands, 'utf8')) as { file: string; arguments: string[] }[];
  assert.deepEqual(db[0], own);
  assert.equal(db.length, 2);
  assert.equal(db[1].file, src);
  assert.deepEqual(db[1].arguments, built.command, 'the entry is the exact command the build ran');
  for (const flag of ['-target', 'bpf', '-D__TARGET_ARCH_', '-I/usr/include/']) {
    assert.ok(db[1].arguments.some((a) => a.startsWith(flag)), `missing ${flag}`);
  }
  assert.ok(db[1].arguments.some((a) => a.startsWith('-I') && fs.existsSync(path.join(a.slice(2), 'vmlinux.h'))), 'an -I folder holds vmlinux.h');

  assert.deepEqual(clangdErrors(dir, src), [], 'a correct program has no clangd errors');

  fs.writeFileSync(src, PROGRAM.replace('&exec_count, 1', '&exec_cuont, 1'));
  const errors = clangdErrors(dir, src);
  assert.equal(errors.length, 1, errors.join('\n'));
  assert.match(errors[0], /undeclared identifier 'exec_cuont'/);
  fs.rmSync(dir, { recursive: true, force: true });
});
