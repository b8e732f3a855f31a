// compile_commands.json merging: a BPF build adds or replaces only its own file's entry, keeps the
// project's other entries, refuses to clobber a file that is not a JSON array, writes atomically.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compileCommandsDir, entryFor, mergeCompileCommands, updateCompileCommands } from '../../extension/authoring/compileCommands';
import { StudioError } from '../../extension/protocol/errors';

const cmd = (src: string) => ['/usr/bin/clang', '-target', 'bpf', '-D__TARGET_ARCH_x86', '-I/cache/vmlinux', '-c', src, '-o', src.replace(/\.c$/, '.o')];

test('a new file gets one entry with the exact command', () => {
  const out = JSON.parse(mergeCompileCommands(undefined, [entryFor(cmd('/p/a.bpf.c'), '/p/a.bpf.c', '/p/a.bpf.o', '/p')]));
  assert.deepEqual(out, [{ directory: '/p', file: '/p/a.bpf.c', arguments: cmd('/p/a.bpf.c'), output: '/p/a.bpf.o' }]);
});

test('merging replaces only the entry for the same file (relative or absolute) and keeps the rest in order', () => {
  const existing = JSON.stringify([
    { directory: '/p', file: 'main.c', command: 'cc -c main.c' },
    { directory: '/p', file: 'a.bpf.c', arguments: ['clang', 'old'] },
    { directory: '/p/sub', file: '../b.bpf.c', arguments: ['clang', 'b'] },
  ]);
  const out = JSON.parse(mergeCompileCommands(existing, [entryFor(cmd('/p/a.bpf.c'), '/p/a.bpf.c', '/p/a.bpf.o', '/p')]));
  assert.equal(out.length, 3);
  assert.deepEqual(out[0], { directory: '/p', file: 'main.c', command: 'cc -c main.c' });
  assert.deepEqual(out[1].arguments, ['clang', 'b']);
  assert.deepEqual(out[2].arguments, cmd('/p/a.bpf.c'));
  // Building again replaces, never duplicates.
  const again = JSON.parse(mergeCompileCommands(JSON.stringify(out), [entryFor(cmd('/p/a.bpf.c'), 'a.bpf.c', '/p/a.bpf.o', '/p')]));
  assert.equal(again.filter((e: { file: string }) => e.file.endsWith('a.bpf.c')).length, 1);
});

test('an empty file is treated as no entries; invalid JSON or a non-array is refused with the fix', () => {
  assert.equal(JSON.parse(mergeCompileCommands('  \n', [entryFor(cmd('/p/a.bpf.c'), '/p/a.bpf.c', '/p/a.bpf.o', '/p')])).length, 1);
  assert.throws(() => mergeCompileCommands('[{', [], '/p/compile_commands.json'), (e: unknown) => e instanceof StudioError && e.kind === 'input' && /not valid JSON.*fix or delete it/.test(e.message));
  assert.throws(() => mergeCompileCommands('{"a":1}', []), /not a JSON array/);
});

test('updateCompileCommands writes valid JSON in place and leaves no temp file; a broken file is left untouched', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-cc-'));
  const file = updateCompileCommands(dir, [entryFor(cmd(`${dir}/a.bpf.c`), `${dir}/a.bpf.c`, `${dir}/a.bpf.o`, dir)]);
  updateCompileCommands(dir, [entryFor(cmd(`${dir}/b.bpf.c`), `${dir}/b.bpf.c`, `${dir}/b.bpf.o`, dir)]);
  assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).length, 2);
  assert.deepEqual(fs.readdirSync(dir), ['compile_commands.json']);
  fs.writeFileSync(file, 'not json');
  assert.throws(() => updateCompileCommands(dir, [entryFor(cmd(`${dir}/a.bpf.c`), `${dir}/a.bpf.c`, `${dir}/a.bpf.o`, dir)]), /not valid JSON/);
  assert.equal(fs.readFileSync(file, 'utf8'), 'not json');
  fs.rmSync(dir, { recursive: true });
});

test('compileCommandsDir: one database per project, never a second one at the workspace root', () => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-ccdir-'));
  try {
    // A loose .bpf.c: the workspace root.
    fs.writeFileSync(path.join(ws, 'loose.bpf.c'), '');
    assert.deepEqual(compileCommandsDir(path.join(ws, 'loose.bpf.c'), ws), { dir: ws, projectEntry: false });
    // A New BPF Project one folder down: its own database, which already describes the source.
    const proj = path.join(ws, 'execwatch');
    fs.mkdirSync(proj);
    fs.writeFileSync(path.join(proj, 'Makefile'), 'all:\n');
    fs.writeFileSync(path.join(proj, 'execwatch.bpf.c'), '');
    assert.deepEqual(compileCommandsDir(path.join(proj, 'execwatch.bpf.c'), ws), { dir: proj, projectEntry: false });
    updateCompileCommands(proj, [{ directory: proj, file: 'execwatch.bpf.c', arguments: ['clang'] }]);
    assert.deepEqual(compileCommandsDir(path.join(proj, 'execwatch.bpf.c'), ws), { dir: proj, projectEntry: true });
    // A source in a subfolder of a project uses the project's database, without an entry for it yet.
    fs.mkdirSync(path.join(proj, 'extra'));
    assert.deepEqual(compileCommandsDir(path.join(proj, 'extra', 'x.bpf.c'), ws), { dir: proj, projectEntry: false });
    assert.ok(!fs.existsSync(path.join(ws, 'compile_commands.json')));
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
});
