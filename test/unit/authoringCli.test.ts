// `ebpf-studio build` and `verify` on bad input: clear reasons, the right exit codes, no stack
// traces, and no root needed to get them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliJs, repoRoot, runCli } from '../helpers';

const built = fs.existsSync(cliJs);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-cli-authoring-'));
const empty = path.join(dir, 'empty.bpf.o');
fs.writeFileSync(empty, '');
const text = path.join(dir, 'notes.txt');
fs.writeFileSync(text, 'hello');
const brokenC = path.join(dir, 'broken.bpf.c');
fs.writeFileSync(brokenC, '#include "vmlinux.h"\nint x = ;\n');

function expect(args: string[], code: number, pattern: RegExp, env?: NodeJS.ProcessEnv) {
  const r = runCli(args, { env, cwd: dir });
  assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
  assert.match(r.stderr, pattern);
  assert.doesNotMatch(r.stderr, /\n\s+at .*\(.*:\d+:\d+\)/, 'no stack trace');
}

test('verify: missing, empty, non-ELF, non-BPF ELF inputs exit 2 with the reason', (t) => {
  if (!built) return t.skip('dist/cli.js is not built: run npm run build');
  expect(['verify', path.join(dir, 'nope.bpf.o')], 2, /does not exist/);
  expect(['verify', empty], 2, /is empty/);
  expect(['verify', text], 2, /neither an ELF object nor C source/);
  expect(['verify', process.execPath], 2, /ELF file for another machine.*not BPF/);
  expect(['verify'], 2, /give a \.bpf\.c source or a \.bpf\.o object/);
  expect(['verify', 'a', 'b'], 2, /give one file/);
});

test('build: missing/empty sources exit 2; an ELF is refused; compile errors exit 1 with clang diagnostics', (t) => {
  if (!built) return t.skip('dist/cli.js is not built');
  expect(['build', path.join(dir, 'nope.bpf.c')], 2, /does not exist/);
  expect(['build', empty], 2, /is empty/);
  expect(['build', process.execPath], 2, /already an ELF object/);
  const r = runCli(['build', brokenC, '--json'], { cwd: dir });
  assert.equal(r.code, 1);
  const out = JSON.parse(r.stdout) as { ok: boolean; diagnostics: { file: string; line: number; severity: string }[] };
  assert.equal(out.ok, false);
  assert.ok(out.diagnostics.some((d) => d.file === brokenC && d.line === 2 && d.severity === 'error'), JSON.stringify(out.diagnostics));
});

test('build: without clang the reason names the package to install', (t) => {
  if (!built) return t.skip('dist/cli.js is not built');
  // /usr/sbin still provides bpftool; clang lives in /usr/bin, which this PATH leaves out.
  expect(['build', path.join(repoRoot, 'test/fixtures/bpf/good.bpf.c'), '-o', path.join(dir, 'x.o')], 4, /clang is not installed.*apt-get install -y clang/, { ...process.env, PATH: '/nonexistent' });
});

test('build writes an object next to -o', (t) => {
  if (!built) return t.skip('dist/cli.js is not built');
  const out = path.join(dir, 'good.bpf.o');
  const r = runCli(['build', path.join(repoRoot, 'test/fixtures/bpf/good.bpf.c'), '-o', out], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /built /);
  assert.equal(fs.readFileSync(out).readUInt32BE(0), 0x7f454c46);
});
