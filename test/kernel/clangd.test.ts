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

test('completion after task-> offers the same task_struct members as clangd (same compile_commands.json)', { timeout: 300_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = await import('vscode-jsonrpc/node');
  const { complete } = await import('../../extension/lsp/analysis');
  const { KernelStructs } = await import('../../extension/authoring/kernelStructs');
  const { mapTypes } = await import('../../extension/lsp/mapTypes');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-clangd-'));
  const src = path.join(dir, 'task.bpf.c');
  const text = PROGRAM.replace('\treturn 0;\n}', '\tstruct task_struct *task = (struct task_struct *)bpf_get_current_task();\n\treturn task->\n}');
  fs.writeFileSync(src, text);
  const r = spawnSync(process.execPath, [cliJs, 'build', 'task.bpf.c', '--json'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  const built = JSON.parse(r.stdout) as { command: string[] };
  const vmDir = built.command.find((a) => a.startsWith('-I') && fs.existsSync(path.join(a.slice(2), 'vmlinux.h')))!.slice(2);
  // The reference: clangd over LSP, reading the compile_commands.json the build wrote.
  const child = (await import('node:child_process')).spawn(clangd!, ['--log=error', '--limit-results=0'], { cwd: dir, stdio: ['pipe', 'pipe', 'ignore'] });
  // A write racing clangd's exit must not crash the test process (EPIPE on its stdin).
  child.stdin.on('error', () => undefined);
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.onError(() => undefined);
  conn.listen();
  try {
    await conn.sendRequest('initialize', { processId: process.pid, rootUri: `file://${dir}`, capabilities: {} });
    conn.sendNotification('initialized', {});
    const uri = `file://${src}`;
    conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'c', version: 1, text } });
    const lines = text.split('\n');
    const line = lines.findIndex((l) => l.includes('return task->'));
    const position = { line, character: lines[line].length };
    type Item = { filterText?: string; label: string; kind?: number };
    let items: Item[] = [];
    // Until its preamble (vmlinux.h) is built clangd answers with plain words: ask until fields come.
    for (let i = 0; i < 120 && !items.some((x) => x.kind === 5); i++) {
      if (i) await new Promise((res) => setTimeout(res, 1000));
      const res = (await conn.sendRequest('textDocument/completion', { textDocument: { uri }, position })) as { items: Item[] } | Item[] | null;
      items = Array.isArray(res) ? res : (res?.items ?? []);
    }
    // clangd lists fields (kind 5); names from filterText, or the label without clangd's leading marker.
    const theirs = new Set(items.filter((i) => i.kind === 5).map((i) => i.filterText ?? i.label.trim()));
    assert.ok(theirs.size > 50, `clangd offered ${theirs.size} fields: ${JSON.stringify(items.slice(0, 5))}`);
    const structs = new KernelStructs(fs.readFileSync(path.join(vmDir, 'vmlinux.h'), 'utf8'));
    const offset = text.indexOf('return task->') + 'return task->'.length;
    const ours = new Set(complete(text, offset, { helpers: new Map(), mapTypes: mapTypes(), structs: () => structs })!.items.map((i) => i.label));
    for (const f of ['pid', 'tgid', 'comm']) assert.ok(ours.has(f), `ours lacks ${f}`);
    assert.deepEqual([...ours].filter((f) => !theirs.has(f)), [], 'we offer fields clangd does not');
    assert.deepEqual([...theirs].filter((f) => !ours.has(f)), [], 'clangd offers fields we do not');
  } finally {
    // LSP shutdown, then exit; SIGKILL if clangd does not go within 10 s.
    await conn.sendRequest('shutdown').catch(() => undefined);
    conn.sendNotification('exit').catch(() => undefined);
    const gone = new Promise((res) => child.once('exit', res));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
    conn.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
