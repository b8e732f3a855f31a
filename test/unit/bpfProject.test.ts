// New BPF Project without the kernel: the files each template writes, the Makefile using the same
// clang flags as our build (so compile_commands.json is true), refusals of bad folders and
// templates, and which loader a source file belongs to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { archInfo, bpfClangArgs } from '../../extension/authoring/buildCommand';
import { createProject, loaderFor, parseTemplate } from '../../extension/authoring/newProject';
import { projectFiles, TEMPLATE_INFO, TEMPLATES } from '../../extension/authoring/projectTemplates';
import { StudioError } from '../../extension/protocol/errors';

const arch = archInfo('x64')!;

test('each template has X.bpf.c, X.h, a skeleton loader X.c, a Makefile and tasks', () => {
  for (const t of TEMPLATES) {
    const app = TEMPLATE_INFO[t].app;
    const files = new Map(projectFiles(t, '/p', arch).map((f) => [f.path, f.content]));
    assert.deepEqual([...files.keys()], [`${app}.bpf.c`, `${app}.h`, `${app}.c`, 'Makefile', '.vscode/tasks.json', '.gitignore']);
    assert.match(files.get(`${app}.bpf.c`)!, /SEC\("tp\//);
    assert.match(files.get(`${app}.bpf.c`)!, new RegExp(`#include "${app}.h"`));
    assert.match(files.get(`${app}.c`)!, new RegExp(`#include "${app}.skel.h"`));
    assert.match(files.get(`${app}.c`)!, new RegExp(`${app}_bpf__open_and_load\\(\\)`));
    assert.match(files.get('Makefile')!, /\$\(BPFTOOL\) gen skeleton/);
    assert.match(files.get('Makefile')!, /-lbpf -lelf -lz/);
    const tasks = JSON.parse(files.get('.vscode/tasks.json')!) as { tasks: { label: string; args: string[] }[] };
    assert.deepEqual(tasks.tasks.map((x) => x.args[0]), ['bpf', 'loader', 'all']);
  }
});

test('the Makefile compiles with our build flags (vmlinux.h from the project folder)', () => {
  const mk = projectFiles('minimal', '/p', arch).find((f) => f.path === 'Makefile')!.content;
  const line = /^BPF_CFLAGS := (.*)$/m.exec(mk)![1].split(' ');
  const ours = bpfClangArgs({ vmlinuxDir: '.', arch });
  assert.deepEqual([...line].sort(), [...ours].sort());
});

test('bad templates and non-empty folders are refused with the fix', () => {
  assert.equal(parseTemplate('ringbuf'), 'ringbuf');
  assert.throws(() => parseTemplate('kprobe'), (e: unknown) => e instanceof StudioError && e.kind === 'input' && /choose one of minimal, ringbuf/.test(e.message));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-np-unit-'));
  fs.writeFileSync(path.join(dir, 'mine.c'), 'int main(void){}');
  const vm = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-np-vm-'));
  fs.writeFileSync(path.join(vm, 'vmlinux.h'), '/* test */');
  assert.throws(() => createProject(dir, 'minimal', vm), /is not empty/);
  assert.throws(() => createProject(path.join(dir, 'mine.c'), 'minimal', vm), /not a folder/);
  assert.equal(fs.readFileSync(path.join(dir, 'mine.c'), 'utf8'), 'int main(void){}', 'nothing of the user is overwritten');
  const created = createProject(path.join(dir, 'new'), 'ringbuf', vm);
  assert.equal(created.app, 'execwatch');
  const db = JSON.parse(fs.readFileSync(path.join(dir, 'new', 'compile_commands.json'), 'utf8')) as { file: string; arguments: string[] }[];
  assert.deepEqual(db.map((e) => path.basename(e.file)), ['execwatch.bpf.c', 'execwatch.c']);
  assert.ok(db[0].arguments.includes(`-I${path.join(dir, 'new')}`));

  assert.deepEqual(loaderFor(path.join(dir, 'new', 'execwatch.bpf.c')), { dir: path.join(dir, 'new'), app: 'execwatch' });
  assert.deepEqual(loaderFor(path.join(dir, 'new', 'execwatch.c')), { dir: path.join(dir, 'new'), app: 'execwatch' });
  assert.equal(loaderFor(path.join(dir, 'mine.c')), undefined, 'no Makefile, no loader');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(vm, { recursive: true, force: true });
});
