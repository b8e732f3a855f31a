// A project made by `ebpf-studio new-project` (what "eBPF: New BPF Project" writes) builds both
// halves with its Makefile against the system's libbpf, and its loader, run as root, reports the
// execs this test makes while it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { kernelSkipReason, runCli } from '../helpers';
import { TEMPLATE_INFO } from '../../extension/authoring/projectTemplates';

const skip = kernelSkipReason() ?? (spawnSync('make', ['--version']).status !== 0 ? 'make is not installed' : undefined);

/** Runs the loader for `seconds`, exec'ing a uniquely named copy of /bin/true `execs` times meanwhile. */
async function runLoader(binary: string, seconds: number, execs: number): Promise<{ stdout: string; stderr: string; code: number | null; marker: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-np-exec-'));
  const marker = `np${process.pid % 100000}x`;
  const tool = path.join(dir, marker);
  fs.copyFileSync('/bin/true', tool);
  fs.chmodSync(tool, 0o755);
  const child = spawn(binary, [String(seconds)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  // Exec only once the loader says it is attached.
  for (let i = 0; i < 100 && !/Ctrl-C/.test(stdout) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50));
  for (let i = 0; i < execs; i++) spawnSync(tool);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  fs.rmSync(dir, { recursive: true, force: true });
  return { stdout, stderr, code, marker };
}

for (const template of ['minimal', 'ringbuf'] as const) {
  test(`new-project --template ${template}: make builds both halves and the loader sees our execs`, { timeout: 180_000 }, async (t) => {
    if (skip) return t.skip(skip);
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-np-')), template);
    const created = runCli(['new-project', dir, '--template', template]);
    assert.equal(created.code, 0, created.stderr);
    const app = TEMPLATE_INFO[template].app;
    for (const f of [`${app}.bpf.c`, `${app}.h`, `${app}.c`, 'Makefile', '.vscode/tasks.json', 'vmlinux.h', 'compile_commands.json']) assert.ok(fs.existsSync(path.join(dir, f)), `missing ${f}`);
    const db = JSON.parse(fs.readFileSync(path.join(dir, 'compile_commands.json'), 'utf8')) as { file: string; arguments: string[] }[];
    assert.deepEqual(db.map((e) => path.basename(e.file)), [`${app}.bpf.c`, `${app}.c`]);
    assert.ok(db[0].arguments.includes('bpf') && db[0].arguments.includes(`-I${dir}`));

    const make = spawnSync('make', ['-C', dir], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(make.status, 0, make.stdout + make.stderr);
    assert.doesNotMatch(make.stderr, /warning:/, 'the templates compile without warnings');
    for (const f of [`${app}.bpf.o`, `${app}.skel.h`, app]) assert.ok(fs.existsSync(path.join(dir, f)), `make did not produce ${f}`);

    const r = await runLoader(path.join(dir, app), 5, 5);
    assert.equal(r.code, 0, r.stderr);
    if (template === 'minimal') {
      const counts = [...r.stdout.matchAll(/^execve calls: (\d+)/gm)].map((m) => Number(m[1]));
      assert.ok(counts.length >= 1, r.stdout);
      assert.ok(counts[counts.length - 1] >= 5, `saw ${counts.at(-1)} execve calls, made 5: ${r.stdout}`);
    } else {
      const ours = r.stdout.split('\n').filter((l) => l.endsWith(`comm=${r.marker}`));
      assert.equal(ours.length, 5, `expected 5 exec records of ${r.marker}:\n${r.stdout}`);
      assert.match(ours[0], /^exec pid=\d+ ppid=\d+ comm=/);
    }

    // Ctrl-C (SIGINT) is the normal way to stop a loader started without a duration: exit code 0.
    const loader = spawn(path.join(dir, app), [], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    loader.stdout.on('data', (d) => (out += d));
    loader.stderr.on('data', (d) => (out += d));
    for (let i = 0; i < 200 && !/Ctrl-C/.test(out) && loader.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50));
    assert.match(out, /Ctrl-C/);
    loader.kill('SIGINT');
    const sigintCode = await new Promise<number | null>((resolve) => loader.on('exit', (c) => resolve(c)));
    assert.equal(sigintCode, 0, `the loader exited ${sigintCode} on SIGINT: ${out}`);

    // Implicit declarations are errors in the generated Makefile: a misspelt helper fails the build at its line.
    assert.match(fs.readFileSync(path.join(dir, 'Makefile'), 'utf8'), /-Werror=implicit-function-declaration/);
    const src = path.join(dir, `${app}.bpf.c`);
    const text = fs.readFileSync(src, 'utf8');
    const helper = template === 'ringbuf' ? 'bpf_ringbuf_reserve' : 'bpf_get_current_pid_tgid';
    fs.writeFileSync(src, text.replace(`${helper}(`, `${helper.slice(0, -1)}(`));
    const line = text.split('\n').findIndex((l) => l.includes(`${helper}(`)) + 1;
    const broken = spawnSync('make', ['-C', dir, 'bpf'], { encoding: 'utf8', timeout: 120_000 });
    assert.notEqual(broken.status, 0, 'the build with a misspelt helper must fail');
    assert.match(broken.stderr, new RegExp(`${app}\\.bpf\\.c:${line}:\\d+: error: .*'${helper.slice(0, -1)}'`));
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  });
}
