// Map/record decoding with an object's BTF (bpftool's JSON dump of a fixture compiled here),
// @sample annotations and ring-buffer record types read from the source, and the run view model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Btf, histogramOf, sumJson } from '../../extension/authoring/btfDecode';
import { readObjectBtf } from '../../extension/authoring/objectBtf';
import { archInfo, buildCommand } from '../../extension/authoring/buildCommand';
import { mapDeclarations, ringbufRecordTypes } from '../../extension/authoring/sourceFacts';
import { attachProblem } from '../../extension/tracers/bpfRun/tracer';
import { bucketRange, histogramBuckets, tableModel } from '../../webview/bpfmaps/model';
import { findTool } from '../../extension/authoring/toolchain';

const root = path.resolve(__dirname, '..', '..');
const fixture = path.join(root, 'test/fixtures/bpf/hist.bpf.c');
const source = fs.readFileSync(fixture, 'utf8');

function buildFixture(): string | undefined {
  if (!findTool('clang') || !findTool('bpftool') || !fs.existsSync(path.join(root, 'build/vmlinux.h'))) return undefined;
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-btf-')), 'hist.bpf.o');
  const cmd = buildCommand({ source: fixture, output: out, vmlinuxDir: path.join(root, 'build'), arch: archInfo(os.arch())! });
  const r = spawnSync(cmd.command, cmd.args, { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

test('@sample annotations and map declarations come from the source', () => {
  const maps = mapDeclarations(source);
  const hist = maps.find((m) => m.name === 'switch_gap_us')!;
  assert.deepEqual(hist.sample, { interval: 500, type: 'log2_hist' });
  assert.equal(hist.mapType, 'BPF_MAP_TYPE_ARRAY');
  assert.equal(hist.valueType, 'struct hist');
  assert.equal(maps.find((m) => m.name === 'switches_by_comm')!.sample, undefined);
  // The runqlat seed's form, with a space before the colon.
  const seed = mapDeclarations('/// @sample {"interval": 1000, "type" : "log2_hist"}\nstruct {\n __uint(type, BPF_MAP_TYPE_HASH);\n __type(value, struct hist);\n} hists SEC(".maps");');
  assert.equal(seed[0].sample?.type, 'log2_hist');
});

test('ring-buffer record structs are found from reserve/output calls', () => {
  assert.equal(ringbufRecordTypes(source).get('execs'), 'exec_event');
  const m = ringbufRecordTypes('struct ev e = {};\nbpf_ringbuf_output(&rb, &e, sizeof(e), 0);\nstruct big *b = bpf_ringbuf_reserve(&rb2, sizeof(struct big), 0);');
  assert.equal(m.get('rb'), 'ev');
  assert.equal(m.get('rb2'), 'big');
});

test("the object's BTF gives map key/value types and decodes records", (t) => {
  const obj = buildFixture();
  if (!obj) return t.skip('needs clang, bpftool and build/vmlinux.h');
  const { btf, problem } = readObjectBtf(obj);
  assert.ok(btf, problem);
  const maps = btf.mapTypes();
  assert.equal(btf.typeName(maps.get('switch_gap_us')!.valueTypeId!), 'struct hist');
  assert.equal(btf.typeName(maps.get('switches_by_comm')!.keyTypeId!), 'char[16]');
  assert.equal(maps.get('execs')!.valueTypeId, undefined);
  const [ev] = btf.structsNamed('exec_event');
  assert.equal(ev.size, 32);
  const rec = Buffer.alloc(32);
  rec.writeUInt32LE(4242, 0);
  rec.writeUInt32LE(1, 4);
  rec.writeBigUInt64LE(123456789012n, 8);
  rec.write('true\0', 16);
  assert.deepEqual(btf.decode(ev.id, rec), { pid: 4242, ppid: 1, ts_ns: 123456789012, comm: 'true' });
  const hist = Buffer.alloc(27 * 4);
  hist.writeUInt32LE(5, 4 * 3);
  const v = btf.decode(maps.get('switch_gap_us')!.valueTypeId!, hist);
  assert.deepEqual(histogramOf(v)?.counts.slice(0, 5), [0, 0, 0, 5, 0]);
  fs.rmSync(path.dirname(obj), { recursive: true, force: true });
});

test('decoding: bitfields, enums, big u64s, per-CPU sums', () => {
  const btf = new Btf([
    { id: 1, kind: 'INT', name: 'unsigned int', size: 4, encoding: '(none)' },
    { id: 2, kind: 'INT', name: 'unsigned long long', size: 8, encoding: '(none)' },
    { id: 3, kind: 'ENUM', name: 'state', size: 4, values: [{ name: 'RUNNING', val: 0 }, { name: 'SLEEPING', val: 1 }] },
    { id: 4, kind: 'STRUCT', name: 's', size: 16, members: [
      { name: 'a', type_id: 1, bits_offset: 0, bitfield_size: 3 },
      { name: 'b', type_id: 1, bits_offset: 3, bitfield_size: 5 },
      { name: 'st', type_id: 3, bits_offset: 32 },
      { name: 'big', type_id: 2, bits_offset: 64 },
    ] },
  ]);
  const b = Buffer.alloc(16);
  b[0] = 0b10101_110;
  b.writeUInt32LE(1, 4);
  b.writeBigUInt64LE(2n ** 63n, 8);
  assert.deepEqual(btf.decode(4, b), { a: 6, b: 21, st: 'SLEEPING', big: '9223372036854775808' });
  assert.deepEqual(sumJson({ n: 1, c: 'x', h: [1, 2] }, { n: 2, c: 'y', h: [3, 4] }), { n: 3, c: 'x', h: [4, 6] });
  assert.deepEqual(histogramOf({ slots: [1, 2, 3], comm: 'java' }), { counts: [1, 2, 3], label: 'comm=java' });
  assert.equal(histogramOf({ a: 1 }), undefined);
});

test('which sections Run can attach by name', () => {
  assert.equal(attachProblem('tracepoint/sched/sched_switch'), undefined);
  assert.equal(attachProblem('tp_btf/sched_switch'), undefined);
  assert.match(attachProblem('uprobe')!, /names no binary/);
  assert.match(attachProblem('perf_event')!, /not attached by section name/);
  assert.equal(attachProblem('uprobe/usr/lib/libc.so.6:malloc'), undefined);
});

test('run view model: bcc bucket ranges, trimmed labels, sorted tables', () => {
  assert.deepEqual(bucketRange(0), { low: 0, high: 1 });
  assert.deepEqual(bucketRange(3), { low: 8, high: 15 });
  const { labels, length } = histogramBuckets([{ counts: [0, 4, 0, 9, 0, 0] }, { counts: [1, 0, 0, 0, 2, 0] }]);
  assert.equal(length, 5);
  assert.equal(labels[4], '16–31');
  const m = tableModel({ kind: 'table', name: 'm', mapType: 'hash', entries: 3, rows: [{ key: 'a', value: 1 }, { key: 'b', value: 30 }, { key: 'c', value: 5 }] });
  assert.deepEqual(m.keyColumns, ['key']);
  assert.deepEqual(m.rows.map((r) => r[0]), ['b', 'c', 'a']);
  const s = tableModel({ kind: 'table', name: 'm', mapType: 'hash', entries: 1, rows: [{ key: { pid: 1, cpu: 0 }, value: { n: 2, comm: 'x' } }] });
  assert.deepEqual([...s.keyColumns, ...s.valueColumns], ['pid', 'cpu', 'n', 'comm']);
});
