// The BPF language server's analysis: completion, hover and SEC() diagnostics, with knowledge
// from this machine (libbpf's bpf_helper_defs.h and build/vmlinux.h from `npm run build`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { complete, diagnose, enclosingCall, hover, type Knowledge } from '../../extension/lsp/analysis';
import { bpftraceComplete, bpftraceHover } from '../../extension/lsp/bpftrace';
import { loadHelpers, DEFAULT_HELPER_DEFS } from '../../extension/lsp/knowledge';
import { mapTypes } from '../../extension/lsp/mapTypes';
import { KernelStructs } from '../../extension/authoring/kernelStructs';
import { checkSection } from '../../extension/authoring/sections';
import { checkAttachTarget, machineUsdt, type AttachTargets } from '../../extension/authoring/attachTargets';
import { parseHelperDefs } from '../../extension/authoring/helperDefs';

const vmlinux = path.resolve(__dirname, '..', '..', 'build', 'vmlinux.h');
const haveHeader = fs.existsSync(DEFAULT_HELPER_DEFS);
const vmText = fs.existsSync(vmlinux) ? fs.readFileSync(vmlinux, 'utf8') : undefined;
const structs = vmText ? new KernelStructs(vmText) : undefined;
const k: Knowledge = { helpers: loadHelpers(DEFAULT_HELPER_DEFS, () => undefined), mapTypes: mapTypes(vmText), structs: () => structs };

/** Text with a "|" marking the cursor → [text, offset]. */
function at(src: string): [string, number] {
  const i = src.indexOf('|');
  return [src.slice(0, i) + src.slice(i + 1), i];
}

test('bpf_helper_defs.h parses into signatures and docs', (t) => {
  if (!haveHeader) return t.skip(`${DEFAULT_HELPER_DEFS} missing (apt-get install libbpf-dev)`);
  const lookup = k.helpers.get('bpf_map_lookup_elem')!;
  assert.equal(lookup.signature, 'void *bpf_map_lookup_elem(void *map, const void *key)');
  assert.equal(lookup.id, 1);
  assert.match(lookup.description, /Perform a lookup in \*map\*/);
  assert.match(lookup.returns, /`NULL` if no entry/);
  assert.ok(k.helpers.size > 150, `${k.helpers.size} helpers`);
  const synthetic = parseHelperDefs('/*\n * bpf_x\n *\n * \tDoes x.\n *\n * Returns\n * \t0.\n */\nstatic long (*bpf_x)(__u32 a, void *(*cb)(int, int)) = (void *) 7;\n');
  assert.deepEqual(synthetic[0].params, ['__u32 a', 'void *(*cb)(int, int)']);
});

test('completion: helpers with signature, docs and argument placeholders', (t) => {
  if (!haveHeader) return t.skip('no bpf_helper_defs.h');
  const [text, off] = at('int f(void) { bpf_ringbuf_res| }');
  const c = complete(text, off, k)!;
  const item = c.items.find((i) => i.label === 'bpf_ringbuf_reserve')!;
  assert.ok(item);
  assert.equal(item.kind, 'function');
  assert.equal(item.detail, 'void *bpf_ringbuf_reserve(void *ringbuf, __u64 size, __u64 flags)');
  assert.equal(item.insertText, 'bpf_ringbuf_reserve(${1:ringbuf}, ${2:size}, ${3:flags})');
  assert.equal(c.replaceStart, text.indexOf('bpf_ringbuf_res'));
  assert.ok(c.items.every((i) => i.label.startsWith('bpf_ringbuf_res')));
});

test('completion: SEC() section names, replacing what was typed inside the string', () => {
  const [text, off] = at('SEC("tp_b|")\nint x(void *ctx) { return 0; }');
  const c = complete(text, off, k)!;
  assert.equal(c.replaceStart, text.indexOf('tp_b'));
  const labels = c.items.map((i) => i.label);
  for (const want of ['tp_btf/', 'tracepoint/', 'raw_tp/', 'uprobe/', 'usdt/', 'perf_event', '.maps', 'license']) assert.ok(labels.includes(want), want);
});

test('completion: map types after __uint(type, and flags after __uint(map_flags,', () => {
  const [t1, o1] = at('struct {\n\t__uint(type, BPF_MAP_TYPE_|);\n} m SEC(".maps");');
  const types = complete(t1, o1, k)!.items.map((i) => i.label);
  for (const want of ['BPF_MAP_TYPE_HASH', 'BPF_MAP_TYPE_RINGBUF', 'BPF_MAP_TYPE_PERCPU_ARRAY', 'BPF_MAP_TYPE_LRU_HASH']) assert.ok(types.includes(want), want);
  assert.ok(!types.includes('BPF_MAP_TYPE_UNSPEC'));
  const [t2, o2] = at('struct {\n\t__uint(map_flags, |);\n} m SEC(".maps");');
  assert.ok(complete(t2, o2, k)!.items.some((i) => i.label === 'BPF_F_NO_PREALLOC'));
  const [t3, o3] = at('struct {\n\t__uint(|);\n} m SEC(".maps");');
  assert.ok(complete(t3, o3, k)!.items.some((i) => i.label === 'max_entries'));
});

test('completion: kernel struct fields inside BPF_CORE_READ from the running kernel', (t) => {
  if (!structs) return t.skip('build/vmlinux.h missing: run npm run build');
  const src = 'SEC("tp_btf/sched_switch")\nint BPF_PROG(h, bool preempt, struct task_struct *prev)\n{\n\tpid_t p = BPF_CORE_READ(prev, real_parent, |);\n}';
  const [text, off] = at(src);
  const c = complete(text, off, k)!;
  const labels = c.items.map((i) => i.label);
  for (const want of ['pid', 'tgid', 'comm', 'real_parent', 'mm']) assert.ok(labels.includes(want), want);
  assert.match(c.items.find((i) => i.label === 'real_parent')!.detail!, /struct task_struct \*/);
  // Walking two levels: prev->mm is struct mm_struct.
  const [t2, o2] = at('void f(struct task_struct *task) { BPF_CORE_READ(task, mm, a|) }');
  const mm = complete(t2, o2, k)!;
  assert.ok(mm.items.some((i) => i.label === 'arg_start'), 'mm_struct fields');
  assert.equal(mm.replaceStart, o2 - 1);
  // BPF_CORE_READ_INTO's source is its second argument.
  const [t3, o3] = at('void f(struct task_struct *t) { int x; BPF_CORE_READ_INTO(&x, t, |) }');
  assert.ok(complete(t3, o3, k)!.items.some((i) => i.label === 'tgid'));
  // Still typing the source pointer: left to clangd.
  const [t4, o4] = at('void f(struct task_struct *t) { BPF_CORE_READ(t|) }');
  assert.equal(complete(t4, o4, k), undefined);
});

test('enclosingCall ignores parentheses inside strings and comments', () => {
  const [text, off] = at('f(a, "x(,)", /* ( */ b, |');
  const c = enclosingCall(text, off)!;
  assert.equal(c.callee, 'f');
  assert.equal(c.args.length, 4);
});

test('hover: helper docs, section meaning, map types, struct field types', (t) => {
  if (!haveHeader) return t.skip('no bpf_helper_defs.h');
  const [t1, o1] = at('x = bpf_get_current_pi|d_tgid();');
  const h1 = hover(t1, o1, k)!;
  assert.match(h1.markdown, /```c\n__u64 bpf_get_current_pid_tgid\(void\)\n```/);
  assert.match(h1.markdown, /_BPF helper #14_/);
  assert.equal(t1.slice(h1.start, h1.end), 'bpf_get_current_pid_tgid');
  const [t2, o2] = at('SEC("tp_btf/sched_sw|itch")');
  assert.match(hover(t2, o2, k)!.markdown, /BTF-typed tracepoint/);
  const [t3, o3] = at('__uint(type, BPF_MAP_TYPE_RING|BUF);');
  assert.match(hover(t3, o3, k)!.markdown, /Ring buffer shared by all CPUs/);
  if (structs) {
    const [t4, o4] = at('void f(struct task_struct *t) { BPF_CORE_READ(t, real_par|ent) }');
    assert.match(hover(t4, o4, k)!.markdown, /struct task_struct \*/);
  }
  assert.equal(hover('int plain_c = 1;', 3, k), undefined);
});

test('diagnostics: unknown SEC() names with a suggestion; known and data sections pass', () => {
  const text = [
    'SEC("tracepoint/sched/sched_switch") int a(void *c) { return 0; }',
    'SEC("tp_btf/sched_wakeup") int b(void *c) { return 0; }',
    'SEC("uprobe") int c(void *c) { return 0; }',
    'SEC("usdt/usr/bin/x:p:n") int d(void *c) { return 0; }',
    'SEC("tracepoitn/sched/sched_switch") int e(void *c) { return 0; }',
    'SEC("kprobe_multi/foo") int f(void *c) { return 0; }',
    '// SEC("nonsense") in a comment is not checked',
    'char LICENSE[] SEC("license") = "GPL";',
    'struct { int x; } m SEC(".maps");',
    'int g SEC(".data.mine");',
  ].join('\n');
  const d = diagnose(text);
  assert.equal(d.length, 2, JSON.stringify(d));
  assert.equal(text.slice(d[0].start, d[0].end), 'tracepoitn/sched/sched_switch');
  assert.match(d[0].message, /not a section libbpf knows.*Did you mean "tracepoint\/sched\/sched_switch"/);
  assert.equal(text.slice(d[1].start, d[1].end), 'kprobe_multi/foo');
  assert.equal(checkSection('tracepoint/sched').ok, false, 'a tracepoint needs category/name');
  assert.equal(checkSection('xdp').ok, true);
  assert.equal(checkSection('xdpx').ok, false, '"xdp" takes no suffix');
});

test('diagnostics: a malformed @sample annotation is a warning on its line', () => {
  const text = '/// @sample {"interval": 1000, "type": }\nstruct {\n\t__uint(type, BPF_MAP_TYPE_HASH);\n} hists SEC(".maps");\n';
  const [d] = diagnose(text);
  assert.equal(d.severity, 'warning');
  assert.match(d.message, /@sample is not valid JSON/);
  assert.equal(text.slice(0, d.end).split('\n').length, 1);
});

test('bpftrace: probe types at line start, builtins and functions, and hover', () => {
  const [t1, o1] = at('trac|');
  assert.ok(bpftraceComplete(t1, o1)!.items.some((i) => i.label === 'tracepoint:'));
  const [t2, o2] = at('kprobe:do_nanosleep { @[co|] = count(); }');
  const items = bpftraceComplete(t2, o2)!.items.map((i) => i.label);
  assert.ok(items.includes('comm') && items.includes('count'));
  assert.ok(!items.includes('tracepoint:'), 'probe types only at the start of a line');
  const [t3, o3] = at('{ @x = hi|st(arg0); }');
  assert.match(bpftraceHover(t3, o3)!.markdown, /log2/);
});

// USDT targets against a real binary with SystemTap notes, compared with binutils' readelf -n.
const LIBJVM = '/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so';
const usdtTargets: AttachTargets = { release: 'test', usdt: machineUsdt() };
const kUsdt: Knowledge = { ...k, targets: () => usdtTargets };

/** "provider:name" of every probe readelf -n prints for a file, or why it cannot be asked. */
function readelfProbes(file: string): Set<string> | string {
  if (!fs.existsSync(file)) return `${file} is absent (apt-get install openjdk-17-jdk-headless)`;
  const r = spawnSync('readelf', ['-n', '--wide', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error || r.status !== 0) return `readelf not runnable (${r.error?.message ?? r.stderr}); apt-get install binutils`;
  const out = new Set<string>();
  for (const m of r.stdout.matchAll(/Provider: (\S+)\s*\n\s*Name: (\S+)$/gm)) out.add(`${m[1]}:${m[2]}`);
  return out;
}

test('usdt: after "usdt/PATH:" the probes offered are exactly those readelf -n lists for the binary', (t) => {
  const want = readelfProbes(LIBJVM);
  if (typeof want === 'string') return t.skip(want);
  assert.ok(want.size > 100, `readelf lists ${want.size} probes`);
  const [text, off] = at(`SEC("usdt/${LIBJVM}:|")`);
  const c = complete(text, off, kUsdt)!;
  assert.equal(text.slice(c.replaceStart, off), '');
  assert.equal(c.replaceStart, text.indexOf(':') + 1);
  assert.deepEqual(new Set(c.items.map((i) => i.label)), want);
  assert.equal(c.incomplete, false);
  // Narrowed by what is typed after the colon: all and only readelf's hotspot:gc* probes.
  const [t2, o2] = at(`SEC("usdt/${LIBJVM}:hotspot:gc|")`);
  const c2 = complete(t2, o2, kUsdt)!;
  assert.deepEqual(c2.items.map((i) => i.label).sort(), [...want].filter((p) => p.startsWith('hotspot:gc')).sort());
  assert.ok(c2.items.some((i) => i.label === 'hotspot:gc__begin'));
  assert.equal(t2.slice(c2.replaceStart, o2), 'hotspot:gc');
});

test('usdt: after "usdt/" the JDK libjvm.so, binaries named in the file and the typed folder are offered', (t) => {
  const want = readelfProbes(LIBJVM);
  if (typeof want === 'string') return t.skip(want);
  const real = fs.realpathSync(LIBJVM);
  const [text, off] = at('SEC("usdt/|")');
  const c = complete(text, off, kUsdt)!;
  assert.equal(c.replaceStart, off);
  const jvm = c.items.find((i) => i.label === real);
  assert.ok(jvm, JSON.stringify(c.items.map((i) => i.label)));
  assert.match(jvm.detail ?? '', new RegExp(`${want.size} USDT probes`));
  // A binary typed elsewhere in the file is offered again; one without notes never is.
  const copy = path.join(fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'usdt-')), 'libcopy.so');
  fs.copyFileSync(LIBJVM, copy);
  try {
    const [t2, o2] = at(`SEC("usdt/${copy}:hotspot:gc__begin") int a(void *c) { return 0; }\nSEC("usdt/|")`);
    assert.ok(complete(t2, o2, kUsdt)!.items.some((i) => i.label === copy));
    // Typing a folder lists its sub-folders and only the files that carry USDT notes.
    fs.writeFileSync(path.join(path.dirname(copy), 'notes.txt'), 'not ELF');
    const [t3, o3] = at(`SEC("usdt/${path.dirname(copy)}/|")`);
    const c3 = complete(t3, o3, kUsdt)!;
    assert.deepEqual(c3.items.map((i) => i.label), [copy]);
    assert.equal(c3.incomplete, true, 'the client asks again as the path grows');
    const [t4, o4] = at(`SEC("usdt/${path.dirname(path.dirname(LIBJVM))}/|")`);
    assert.ok(complete(t4, o4, kUsdt)!.items.some((i) => i.label === `${path.dirname(path.dirname(LIBJVM))}/server/` && i.kind === 'module'));
  } finally {
    fs.rmSync(path.dirname(copy), { recursive: true, force: true });
  }
});

test('usdt: a missing binary, one without notes and an unknown probe are warnings; a real probe is not', (t) => {
  const want = readelfProbes(LIBJVM);
  if (typeof want === 'string') return t.skip(want);
  // An ELF binary that readelf shows without USDT notes.
  const noNotes = ['/usr/bin/ls', '/bin/ls', '/usr/bin/env', process.execPath].find((f) => {
    const p = readelfProbes(f);
    return typeof p !== 'string' && p.size === 0;
  });
  if (!noNotes) return t.skip('no ELF binary without USDT notes found (ls, env, node)');
  const text = [
    `SEC("usdt/${LIBJVM}:hotspot:gc__begin") int a(void *c) { return 0; }`,
    `SEC("usdt/${LIBJVM}:hotspot:gc_begin") int b(void *c) { return 0; }`,
    'SEC("usdt//no/such/libfoo.so:p:n") int c(void *c) { return 0; }',
    `SEC("usdt/${noNotes}:p:n") int d(void *c) { return 0; }`,
    'SEC("usdt/libc.so.6:libc:setjmp") int e(void *c) { return 0; }',
  ].join('\n');
  const d = diagnose(text, kUsdt);
  assert.deepEqual(d.map((x) => [x.code, x.severity]), Array(3).fill(['missing-attach-target', 'warning']), JSON.stringify(d));
  assert.equal(text.slice(d[0].start, d[0].end), `usdt/${LIBJVM}:hotspot:gc_begin`);
  assert.match(d[0].message, new RegExp(`no USDT probe "hotspot:gc_begin" in .*libjvm.so \\(it has ${want.size} probes.*Did you mean "usdt/${LIBJVM}:hotspot:gc__begin"\\?`));
  assert.match(d[1].message, /\/no\/such\/libfoo.so does not exist/);
  assert.match(d[2].message, /has no \.note\.stapsdt section/);
  // Every probe readelf lists passes the check.
  for (const p of want) assert.equal(checkAttachTarget(`usdt/${LIBJVM}:${p}`, usdtTargets), undefined, p);
});
