// What the loader view and Stop rely on, without the kernel: program/link fds parsed from fdinfo,
// declared programs joined with loaded ones, sections read from a real BPF object (compared with
// llvm-objdump/readelf where installed), raw BTF decoded as bpftool decodes it, and Stop's
// SIGINT → SIGTERM → SIGKILL escalation on real child processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { bpfFdsFromFdinfo, objectPrograms, programStates } from '../../extension/authoring/loaderPrograms';
import { stopProcess } from '../../extension/authoring/processStop';
import { rawBtfTypes } from '../../extension/authoring/kernelBtf';
import { ElfFile } from '../../extension/sys/elf/elf';
import { findTool } from '../../extension/authoring/toolchain';

const root = path.resolve(__dirname, '..', '..');

test('fdinfo: program fds and link fds by program id', () => {
  const fds = bpfFdsFromFdinfo([
    'pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nprog_type:\t5\nprog_jited:\t1\nprog_tag:\t6deef7357e7b4530\nmemlock:\t4096\nprog_id:\t812\n',
    'pos:\t0\nflags:\t02000000\nmnt_id:\t15\nino:\t1057\nlink_type:\tperf_event\nlink_id:\t90\nprog_tag:\t6deef7357e7b4530\nprog_id:\t812\n',
    'pos:\t0\nflags:\t02000002\nmap_type:\t27\nkey_size:\t0\nmap_id:\t77\n',
    'pos:\t0\nflags:\t0100000\n',
  ]);
  assert.deepEqual(fds.programs, [812]);
  assert.deepEqual([...fds.links], [[812, ['perf_event']]]);
});

test('declared programs joined with the loaded ones: attached, loaded only, missing, extra', () => {
  const states = programStates(
    [
      { name: 'on_exec', section: 'tp/sched/sched_process_exec' },
      { name: 'a_very_long_program_name', section: 'tp/sched/sched_switch' },
      { name: 'off', section: 'kprobe/do_unlinkat' },
    ],
    [
      { id: 5, name: 'on_exec', type: 5 },
      { id: 6, name: 'a_very_long_pro', type: 5 },
      { id: 7, name: 'extra', type: 26 },
    ],
    new Map([[5, ['perf_event']]]),
  );
  assert.deepEqual(states, [
    { name: 'on_exec', section: 'tp/sched/sched_process_exec', attached: true, detail: 'prog id 5, perf_event link' },
    { name: 'a_very_long_program_name', section: 'tp/sched/sched_switch', attached: false, reason: 'loaded as prog id 6, not attached (no link: attached by other means, or not at all)' },
    { name: 'off', section: 'kprobe/do_unlinkat', attached: false, reason: 'not loaded (autoload off, or the loader has not loaded it yet)' },
    { name: 'extra', section: '(not in the object)', attached: false, reason: 'prog id 7, no link' },
  ]);
});

test('program sections of a real BPF object match readelf', (t) => {
  const obj = path.join(root, 'dist', 'bpf', 'runqlat.bpf.o');
  if (!fs.existsSync(obj)) return t.skip('dist/bpf not built: node scripts/build.mjs');
  const progs = objectPrograms(obj);
  assert.ok(progs.length >= 2, JSON.stringify(progs));
  const readelf = findTool('readelf');
  if (!readelf) return;
  // Reference: readelf's symbol table (GLOBAL FUNC symbols) and section headers.
  const sections = new Map<string, string>();
  for (const m of spawnSync(readelf, ['-SW', obj], { encoding: 'utf8' }).stdout.matchAll(/^\s*\[\s*(\d+)\]\s+(\S+)/gm)) sections.set(m[1], m[2]);
  const ref = [...spawnSync(readelf, ['-sW', obj], { encoding: 'utf8' }).stdout.matchAll(/^\s*\d+:\s+\S+\s+\d+\s+FUNC\s+GLOBAL\s+\S+\s+(\d+)\s+(\S+)$/gm)]
    .map((m) => ({ name: m[2], section: sections.get(m[1])! }))
    .filter((p) => p.section !== '.text');
  assert.deepEqual(progs, ref);
});

test('raw BTF of a BPF object decodes to the types bpftool prints', (t) => {
  const obj = path.join(root, 'dist', 'bpf', 'runqlat.bpf.o');
  const bpftool = findTool('bpftool');
  if (!fs.existsSync(obj) || !bpftool) return t.skip('dist/bpf not built or bpftool missing');
  const elf = new ElfFile(obj);
  const mine = rawBtfTypes(elf.sectionData(elf.section('.BTF')!));
  elf.close();
  const ref = (JSON.parse(spawnSync(bpftool, ['-j', 'btf', 'dump', 'file', obj], { encoding: 'utf8', maxBuffer: 1 << 28 }).stdout) as { types: Record<string, unknown>[] }).types;
  assert.equal(mine.length, ref.length);
  const FIELDS = ['id', 'kind', 'name', 'size', 'type_id', 'nr_elems', 'encoding', 'nr_bits', 'members', 'vars'];
  for (let i = 0; i < ref.length; i++) {
    for (const f of FIELDS) {
      if (!(f in ref[i]) || ref[i].kind === 'ENUM64') continue;
      assert.deepEqual((mine[i] as unknown as Record<string, unknown>)[f], ref[i][f], `type ${i + 1} (${String(ref[i].kind)} ${String(ref[i].name)}) field ${f}`);
    }
  }
});

function child(script: string) {
  const c = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise<typeof c>((resolve) => c.stdout.once('data', () => resolve(c)));
}

test('Stop: SIGINT is enough for a well-behaved program', async () => {
  const c = await child("process.on('SIGINT', () => process.exit(0)); console.log('ready'); setInterval(() => {}, 1000);");
  const o = await stopProcess(c, 500);
  assert.equal(o.signal, 'SIGINT');
  assert.match(o.report, /^stopped by SIGINT after \d+\.\d s$/);
  assert.equal(c.exitCode, 0);
});

test('Stop: SIGTERM after the grace period when SIGINT is ignored, SIGKILL when SIGTERM is too', async () => {
  const a = await child("process.on('SIGINT', () => {}); console.log('ready'); setInterval(() => {}, 1000);");
  const oa = await stopProcess(a, 300);
  assert.equal(oa.signal, 'SIGTERM');
  assert.equal(a.signalCode, 'SIGTERM');
  assert.match(oa.report, /^ignored SIGINT for 0\.3 s; stopped by SIGTERM after/);
  const b = await child("process.on('SIGINT', () => {}); process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000);");
  const ob = await stopProcess(b, 300);
  assert.equal(ob.signal, 'SIGKILL');
  assert.equal(b.signalCode, 'SIGKILL');
  assert.ok(ob.ms >= 600, `${ob.ms} ms`);
  assert.match(ob.report, /^ignored SIGINT and SIGTERM for 0\.6 s; stopped by SIGKILL/);
});
