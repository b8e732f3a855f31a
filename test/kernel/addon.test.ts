// The native addon against the real kernel, through bpf/selftest.bpf.c. Needs root (or
// CAP_BPF+CAP_PERFMON) and a built tree (node scripts/build.mjs); otherwise each test skips
// with the reason.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';

type Addon = typeof import('../../native/index');
type BpfObject = InstanceType<Addon['BpfObject']>;
type BpfError = import('../../native/index').BpfError;

const repoRoot = process.env.EBPF_STUDIO_ROOT ?? path.resolve(__dirname, '..', '..');
const addonPath = path.join(repoRoot, 'native/build/Release/ebpf_studio.node');
const selftestPath = path.join(repoRoot, 'dist/bpf/selftest.bpf.o');
const libjvm = '/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so';
const java17 = '/usr/lib/jvm/java-17-openjdk-amd64/bin/java';
const MAGIC = 0xfeedface_cafebeefn;
const EXEC_PROGRAMS = { tracepoint: 'on_exec_tp', raw_tp: 'on_exec_raw', tp_btf: 'on_exec_btf' } as const;
const OUR_PROGRAMS = ['on_exec_tp', 'on_exec_raw', 'on_exec_btf', 'on_sample', 'on_uprobe', 'on_usdt'];

const addon: Addon | undefined = fs.existsSync(addonPath) ? require(addonPath) : undefined;

/** Why nothing can run at all (no build), or undefined. */
function buildMissing(): string | undefined {
  if (!addon) return `the addon is not built (${addonPath}): run node scripts/build.mjs`;
  if (!fs.existsSync(selftestPath)) return `${selftestPath} is missing: run node scripts/build.mjs`;
  return undefined;
}

let kernelReason: string | undefined | null = null;
/** Why BPF cannot be loaded here, or undefined; probed once with a real load. */
function kernelMissing(): string | undefined {
  if (kernelReason !== null) return kernelReason;
  kernelReason = buildMissing();
  if (!kernelReason) {
    const obj = new addon!.BpfObject(selftestPath);
    try {
      obj.load();
    } catch (e) {
      // Without privileges any failure is expected; as root only EPERM (lockdown, containers) is,
      // anything else is a real failure and must not hide behind a skip.
      const err = e as BpfError;
      if (process.getuid?.() === 0 && err.code !== 'EPERM') throw e;
      kernelReason = `BPF is not permitted here (needs root or CAP_BPF + CAP_PERFMON): ${err.message}`;
    } finally {
      obj.close();
    }
  }
  return kernelReason;
}

function skipUnlessBuilt(t: TestContext): boolean {
  const reason = buildMissing();
  if (reason) t.skip(reason);
  return !reason;
}

function skipUnlessKernel(t: TestContext): boolean {
  const reason = kernelMissing();
  if (reason) t.skip(reason);
  return !reason;
}

function withObject<T>(fn: (obj: BpfObject) => T | Promise<T>): Promise<T> {
  const obj = new addon!.BpfObject(selftestPath);
  return Promise.resolve()
    .then(() => fn(obj))
    .finally(() => obj.close());
}

function i32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(v);
  return b;
}
function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}
function u64(v: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
}

function assertBpfError(e: unknown, code: string, pattern?: RegExp): true {
  const err = e as BpfError;
  assert.ok(err instanceof Error, 'expected an Error');
  assert.equal(err.code, code, err.message);
  assert.ok(err.errno > 0, 'errno is positive');
  assert.equal(typeof err.log, 'string');
  if (pattern) assert.match(err.message, pattern);
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await sleep(20);
  }
  return true;
}

interface ExecEvent {
  magic: bigint;
  pid: number;
  tgid: number;
  ppid: number;
  source: number;
  comm: string;
}

/** Layout of struct selftest_event (bpf/selftest.h). */
function decodeEvents(batch: Buffer, offsets: Uint32Array): ExecEvent[] {
  const out: ExecEvent[] = [];
  for (let i = 0; i + 1 < offsets.length; i++) {
    const rec = batch.subarray(offsets[i], offsets[i + 1]);
    assert.equal(rec.length, 40);
    const comm = rec.subarray(24, 40);
    const nul = comm.indexOf(0);
    out.push({
      magic: rec.readBigUInt64LE(0),
      pid: rec.readUInt32LE(8),
      tgid: rec.readUInt32LE(12),
      ppid: rec.readUInt32LE(16),
      source: rec.readUInt32LE(20),
      comm: comm.subarray(0, nul < 0 ? 16 : nul).toString('latin1'),
    });
  }
  return out;
}

/** Runs /bin/true n times as children of this process, one after the other; their pids. */
async function execTrue(n: number): Promise<number[]> {
  const pids: number[] = [];
  for (let i = 0; i < n; i++) {
    const child = spawn('/bin/true');
    pids.push(child.pid!);
    await once(child, 'exit');
  }
  return pids;
}

/** Loads the selftest with only `mode`'s exec program, filtered to our children. */
function loadExecObject(obj: BpfObject, mode: keyof typeof EXEC_PROGRAMS): string {
  const chosen = EXEC_PROGRAMS[mode];
  for (const name of Object.values(EXEC_PROGRAMS)) obj.setAutoload(name, name === chosen);
  obj.setRodata('target_ppid', i32(process.pid));
  obj.setRodata('magic', u64(MAGIC));
  obj.load();
  return chosen;
}

async function checkExecEvents(obj: BpfObject, source: number, options?: { reuse?: boolean }): Promise<void> {
  const events: ExecEvent[] = [];
  const backing = new Set<ArrayBufferLike>();
  const rb = obj.openRingBuffer(
    'events',
    (batch, offsets) => {
      assert.ok(Buffer.isBuffer(batch));
      assert.ok(offsets instanceof Uint32Array);
      assert.equal(batch.length, offsets[offsets.length - 1], 'the batch Buffer ends with its last record');
      backing.add(batch.buffer);
      events.push(...decodeEvents(batch, offsets));
    },
    options,
  );
  try {
    const pids = await execTrue(5);
    assert.ok(await waitFor(() => events.length >= 5, 5000), `got ${events.length} of 5 events`);
    await sleep(200); // nothing beyond our five may arrive
    assert.deepEqual(events.map((e) => e.pid).sort(), [...pids].sort());
    for (const e of events) {
      assert.equal(e.magic, MAGIC);
      assert.equal(e.tgid, e.pid);
      assert.equal(e.ppid, process.pid);
      assert.equal(e.source, source);
      assert.equal(e.comm, 'true');
    }
    // reuse: every batch is a view of one Buffer (it only grows when a batch outgrows it)
    if (options?.reuse) assert.equal(backing.size, 1, `${backing.size} backing buffers`);
  } finally {
    rb.close();
  }
}

function perfEventFds(): number {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[perf_event]') n++;
    } catch {
      // closed while listing
    }
  }
  return n;
}

function libcPath(): string | undefined {
  const maps = fs.readFileSync('/proc/self/maps', 'utf8');
  const m = /\s(\/\S*\/libc(?:\.so\.6|-[\d.]+\.so))$/m.exec(maps);
  return m?.[1];
}

function ourLoadedPrograms(): string[] {
  const r = spawnSync('bpftool', ['prog', 'list', '--json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `bpftool failed: ${r.stderr}`);
  const progs = JSON.parse(r.stdout) as { name?: string }[];
  return progs.map((p) => p.name ?? '').filter((n) => OUR_PROGRAMS.includes(n));
}

// ---------------------------------------------------------------- open and inspect

test('opening a missing file throws BpfError ENOENT', (t) => {
  if (!skipUnlessBuilt(t)) return;
  assert.throws(
    () => new addon!.BpfObject('/nonexistent/nothing.bpf.o'),
    (e) => assertBpfError(e, 'ENOENT', /^open\(\/nonexistent\/nothing\.bpf\.o\): No such file or directory \(ENOENT\)/),
  );
});

test('opening a file that is not ELF throws BpfError', (t) => {
  if (!skipUnlessBuilt(t)) return;
  const file = path.join(os.tmpdir(), `ebpf-studio-not-elf-${process.pid}.o`);
  fs.writeFileSync(file, 'this is not an ELF object\n');
  try {
    assert.throws(
      () => new addon!.BpfObject(file),
      (e) => assertBpfError(e, 'LIBBPF_ERRNO__FORMAT', /not a proper ELF object/),
    );
  } finally {
    fs.rmSync(file, { force: true });
  }
});

test('bad argument types throw TypeError', (t) => {
  if (!skipUnlessBuilt(t)) return;
  // Wrong argument types on purpose: the addon must reject them, whatever the .d.ts says.
  type Untyped = Record<string, (...args: unknown[]) => unknown>;
  assert.throws(() => new (addon!.BpfObject as unknown as new (a: unknown) => unknown)(42), TypeError);
  return withObject((obj) => {
    assert.throws(() => (obj as unknown as Untyped).setRodata('magic', 'not a buffer'), TypeError);
    assert.throws(() => (obj as unknown as Untyped).setAutoload('on_usdt', 1), TypeError);
    assert.throws(() => (obj as unknown as Untyped).detach('1'), TypeError);
    assert.throws(() => (obj as unknown as Untyped).attachPerfEvent('on_sample', { type: 'cycles', frequency: 1, cpu: 0 }), TypeError);
    assert.throws(() => (obj as unknown as Untyped).openRingBuffer('events', 'not a function'), TypeError);
  });
});

test('programs(), maps() and variables() describe the object', async (t) => {
  if (!skipUnlessBuilt(t)) return;
  await withObject((obj) => {
    assert.equal(obj.path, selftestPath);
    const progs = obj.programs();
    assert.deepEqual(
      progs.map((p) => [p.name, p.section, p.autoload]),
      [
        ['on_exec_tp', 'tracepoint/sched/sched_process_exec', true],
        ['on_exec_raw', 'raw_tp/sched_process_exec', true],
        ['on_exec_btf', 'tp_btf/sched_process_exec', true],
        ['on_sample', 'perf_event', true],
        ['on_uprobe', 'uprobe', true],
        ['on_usdt', 'usdt', true],
        ['each_thread', 'iter/task', true],
      ],
    );
    obj.setAutoload('on_usdt', false);
    assert.equal(obj.programs().find((p) => p.name === 'on_usdt')!.autoload, false);

    const maps = new Map(obj.maps().map((m) => [m.name, m]));
    assert.deepEqual(maps.get('events'), {
      name: 'events', type: 27, typeName: 'ringbuf', keySize: 0, valueSize: 0, maxEntries: 256 * 1024, perCpu: false,
    });
    assert.equal(maps.get('counts')!.typeName, 'hash');
    assert.equal(maps.get('stacks')!.typeName, 'stack_trace');
    assert.equal(maps.get('stacks')!.valueSize, 127 * 8);
    assert.equal(maps.get('samples')!.keySize, 4);
    assert.equal(maps.get('uprobe_hits')!.typeName, 'array');

    assert.deepEqual(obj.variables(), [
      { name: 'target_ppid', offset: 0, size: 4 },
      { name: 'iter_tgid', offset: 4, size: 4 },
      { name: 'magic', offset: 8, size: 8 },
    ]);
    assert.deepEqual(obj.variables('.bss'), [{ name: 'dropped', offset: 0, size: 8 }]);
    assert.deepEqual(obj.variables('.no_such_section'), []);
  });
});

test('setRodata checks the name and the size', async (t) => {
  if (!skipUnlessBuilt(t)) return;
  await withObject((obj) => {
    assert.throws(() => obj.setRodata('magic', Buffer.alloc(4)), (e) => assertBpfError(e, 'EINVAL', /magic.*4 bytes.*8/));
    assert.throws(() => obj.setRodata('no_such_var', Buffer.alloc(4)), (e) => assertBpfError(e, 'ENOENT'));
    obj.setRodata('magic', u64(1n));
    assert.throws(() => obj.setAutoload('no_such_prog', true), (e) => assertBpfError(e, 'ENOENT', /no_such_prog/));
    assert.throws(() => obj.mapLookup('counts', u32(1)), (e) => assertBpfError(e, 'EINVAL', /not loaded/));
  });
});

// ---------------------------------------------------------------- load

test('load() returns the verifier log on request and locks the object', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject((obj) => {
    obj.setMaxEntries('counts', 128);
    const plain = new addon!.BpfObject(selftestPath);
    try {
      assert.equal(plain.load().log, '');
    } finally {
      plain.close();
    }
    const { log } = obj.load({ logLevel: 1 });
    assert.match(log, /== program on_exec_tp ==/);
    assert.match(log, /processed \d+ insns/);
    assert.throws(() => obj.setRodata('magic', u64(2n)), (e) => assertBpfError(e, 'EBUSY'));
    assert.throws(() => obj.setMaxEntries('counts', 64), (e) => assertBpfError(e, 'EBUSY'));
    assert.throws(() => obj.load(), (e) => assertBpfError(e, 'EBUSY'));
  });
});

test('a verifier rejection throws BpfError carrying the verifier log', (t) => {
  if (!skipUnlessKernel(t)) return;
  if (spawnSync('clang', ['--version']).status !== 0) return t.skip('clang is not installed');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-bad-'));
  try {
    // Dereferences a hash map value without the NULL check the verifier insists on (newer
    // kernels know constant-key array lookups cannot fail, so the map must be a hash).
    fs.writeFileSync(
      path.join(dir, 'bad.bpf.c'),
      `#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } m SEC(".maps");
SEC("tracepoint/sched/sched_process_exec") int bad(void *ctx) { __u32 k = 0; __u64 *v = bpf_map_lookup_elem(&m, &k); *v = 1; return 0; }
char LICENSE[] SEC("license") = "GPL";
`,
    );
    const cc = spawnSync('clang', ['-O2', '-g', '-target', 'bpf', '-I/usr/include/x86_64-linux-gnu', '-c', 'bad.bpf.c', '-o', 'bad.bpf.o'], { cwd: dir, encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    const obj = new addon!.BpfObject(path.join(dir, 'bad.bpf.o'));
    try {
      assert.throws(
        () => obj.load(),
        (e) => {
          assertBpfError(e, 'EACCES', /^load\(.*bad\.bpf\.o\): Permission denied \(EACCES\)/);
          assert.match((e as BpfError).log, /-- BEGIN PROG LOAD LOG --[\s\S]*invalid mem access[\s\S]*-- END PROG LOAD LOG --/);
          return true;
        },
      );
    } finally {
      obj.close();
    }
    // With our own log buffer (logLevel) libbpf prints nothing itself: the log must still come back.
    const logged = new addon!.BpfObject(path.join(dir, 'bad.bpf.o'));
    try {
      assert.throws(
        () => logged.load({ logLevel: 1 }),
        (e) => {
          assertBpfError(e, 'EACCES', /Permission denied/);
          assert.match((e as BpfError).log, /== program bad ==[\s\S]*invalid mem access/);
          return true;
        },
      );
    } finally {
      logged.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------- exec events through the ring buffer

test('tracepoint: the ring buffer delivers exactly our five execs, with the magic', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject(async (obj) => {
    const prog = loadExecObject(obj, 'tracepoint');
    assert.equal(typeof obj.attachTracepoint(prog, 'sched', 'sched_process_exec'), 'number');
    await checkExecEvents(obj, 1);
  });
});

test('ring buffer with reuse: the same five execs, each batch a view of one reused Buffer', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject(async (obj) => {
    const prog = loadExecObject(obj, 'tracepoint');
    obj.attachTracepoint(prog, 'sched', 'sched_process_exec');
    assert.throws(() => obj.openRingBuffer('events', () => {}, 'yes' as unknown as { reuse: boolean }), /options must be an object/);
    await checkExecEvents(obj, 1, { reuse: true });
  });
});

test('raw_tp (setAutoload + attachRawTracepoint)', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject(async (obj) => {
    const prog = loadExecObject(obj, 'raw_tp');
    assert.throws(() => obj.attach('on_exec_tp'), BpfError_of('on_exec_tp'));
    obj.attachRawTracepoint(prog, 'sched_process_exec');
    await checkExecEvents(obj, 2);
  });
});

test('tp_btf (setAutoload + attach by section)', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject(async (obj) => {
    const prog = loadExecObject(obj, 'tp_btf');
    obj.attach(prog);
    await checkExecEvents(obj, 3);
  });
});

/** A program left out of the load cannot be attached. */
function BpfError_of(prog: string) {
  return (e: unknown) => {
    assert.ok(e instanceof Error);
    assert.match(e.message, new RegExp(`attach\\(${prog}\\)`));
    assert.ok((e as BpfError).errno > 0);
    return true;
  };
}

// ---------------------------------------------------------------- maps

test('mapDump reads, and with delete drains, a hash map', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject(async (obj) => {
    const prog = loadExecObject(obj, 'tracepoint');
    const link = obj.attachTracepoint(prog, 'sched', 'sched_process_exec');
    const pids = await execTrue(3);
    obj.detach(link);

    const dump = obj.mapDump('counts');
    assert.equal(dump.count, 3);
    assert.equal(dump.keys.length, 3 * 4);
    assert.equal(dump.values.length, 3 * 8);
    const keys = Array.from({ length: dump.count }, (_, i) => dump.keys.readUInt32LE(i * 4));
    assert.deepEqual(keys.sort(), [...pids].sort());
    for (let i = 0; i < dump.count; i++) assert.equal(dump.values.readBigUInt64LE(i * 8), 1n);

    const drained = obj.mapDump('counts', { delete: true });
    assert.equal(drained.count, 3);
    assert.equal(obj.mapDump('counts').count, 0);

    // Arrays have every key; the ring buffer has no keys to walk.
    assert.equal(obj.mapDump('uprobe_hits').count, 1);
    assert.throws(() => obj.mapDump('events'), (e) => (e as BpfError).errno > 0);
  });
});

test('mapLookup, mapUpdate and mapDelete', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject((obj) => {
    obj.load();
    assert.equal(obj.mapLookup('counts', u32(12345)), null);
    obj.mapUpdate('counts', u32(12345), u64(7n));
    assert.equal(obj.mapLookup('counts', u32(12345))!.readBigUInt64LE(0), 7n);
    // BPF_NOEXIST on an existing key
    assert.throws(() => obj.mapUpdate('counts', u32(12345), u64(8n), 1), (e) => assertBpfError(e, 'EEXIST'));
    assert.equal(obj.mapDelete('counts', u32(12345)), true);
    assert.equal(obj.mapDelete('counts', u32(12345)), false);
    assert.equal(obj.mapLookup('counts', u32(12345)), null);
    assert.throws(() => obj.mapLookup('counts', Buffer.alloc(8)), (e) => assertBpfError(e, 'EINVAL', /key has 8 bytes/));
    assert.throws(() => obj.mapUpdate('counts', u32(1), Buffer.alloc(4)), (e) => assertBpfError(e, 'EINVAL', /value/));
    assert.throws(() => obj.mapLookup('nope', u32(1)), (e) => assertBpfError(e, 'ENOENT', /no map named 'nope'/));
  });
});

// ---------------------------------------------------------------- perf events and stacks

test('attachPerfEvent on every online CPU records user stacks readable with readStack', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject(async (obj) => {
    obj.load();
    const fdsBefore = perfEventFds();
    const links: number[] = [];
    let offline = 0;
    for (let cpu = 0; cpu < addon!.numPossibleCpus(); cpu++) {
      try {
        links.push(obj.attachPerfEvent('on_sample', { type: 'cpu-clock', frequency: 999, cpu }));
      } catch (e) {
        if ((e as BpfError).code !== 'ENODEV') throw e;
        offline++;
      }
    }
    assert.ok(links.length > 0, `no CPU accepted a perf event (${offline} offline)`);
    assert.equal(perfEventFds(), fdsBefore + links.length);

    const end = Date.now() + 400;
    let x = 0;
    while (Date.now() < end) x += Math.sqrt(x + 1);
    for (const link of links) obj.detach(link);
    // libbpf closes the perf event fd together with the link
    assert.equal(perfEventFds(), fdsBefore);

    const samples = obj.mapDump('samples');
    assert.ok(samples.count > 0, 'no samples recorded');
    let best = -1;
    let bestCount = 0n;
    for (let i = 0; i < samples.count; i++) {
      const id = samples.keys.readInt32LE(i * 4);
      const n = samples.values.readBigUInt64LE(i * 8);
      if (id >= 0 && n > bestCount) [best, bestCount] = [id, n];
    }
    const stack = obj.readStack('stacks', best);
    assert.ok(stack instanceof BigUint64Array);
    assert.ok(stack.length > 0, 'empty stack');
    assert.ok(stack.every((ip) => ip !== 0n));
    // an id no sample produced reads as empty (stack ids are hash buckets:
    // any fixed id in range can be taken by a real stack on a busy machine)
    const used = new Set<number>();
    for (let i = 0; i < samples.count; i++) used.add(samples.keys.readInt32LE(i * 4));
    let unused = 0;
    while (used.has(unused)) unused++;
    assert.equal(obj.readStack('stacks', unused).length, 0);
    assert.equal(obj.readStack('stacks', 4096).length, 0);
    assert.equal(obj.readStack('stacks', -14).length, 0);

    // stack trace maps have no batch operations: mapDump walks them
    const stacks = obj.mapDump('stacks');
    assert.ok(stacks.count > 0);
    assert.equal(stacks.values.length, stacks.count * 127 * 8);
  });
});

// ---------------------------------------------------------------- uprobes and USDT

test("attachUprobe on libc's getpid counts a child's calls", async (t) => {
  if (!skipUnlessKernel(t)) return;
  const libc = libcPath();
  if (!libc) return t.skip('libc not found in /proc/self/maps');
  const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  await withObject((obj) => {
    obj.load();
    obj.attachUprobe('on_uprobe', { binary: libc, symbol: 'getpid', pid: -1, retprobe: false });
    const r = spawnSync(python, ['-c', 'import os\nfor _ in range(100): os.getpid()']);
    if (r.error) return t.skip(`python3 cannot run: ${r.error.message}`);
    const hits = obj.mapLookup('uprobe_hits', u32(0))!.readBigUInt64LE(0);
    assert.ok(hits >= 100n, `only ${hits} hits`);

    assert.throws(
      () => obj.attachUprobe('on_uprobe', { binary: libc, symbol: 'no_such_function_here', pid: -1, retprobe: true }),
      (e) => assertBpfError(e, 'ENOENT', /^attachUretprobe\(on_uprobe to no_such_function_here in .*libc/),
    );
  });
});

test('attachUsdt on hotspot:gc__begin in libjvm.so', async (t) => {
  if (!skipUnlessKernel(t)) return;
  if (!fs.existsSync(libjvm)) return t.skip(`${libjvm} is not installed`);
  await withObject(async (obj) => {
    obj.load();
    assert.throws(
      () => obj.attachUsdt('on_usdt', { binary: '/nonexistent/libjvm.so', provider: 'hotspot', name: 'gc__begin', pid: -1 }),
      (e) => assertBpfError(e, 'ENOENT', /^attachUsdt\(hotspot:gc__begin in \/nonexistent\/libjvm\.so\)/),
    );
    obj.attachUsdt('on_usdt', { binary: libjvm, provider: 'hotspot', name: 'gc__begin', pid: -1, cookie: 7 });

    if (!fs.existsSync(java17)) return;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-gc-'));
    try {
      fs.writeFileSync(path.join(dir, 'Gc.java'), 'public class Gc { public static void main(String[] a) { for (int i = 0; i < 3; i++) System.gc(); } }\n');
      const r = spawnSync(java17, ['-XX:+UseSerialGC', path.join(dir, 'Gc.java')], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 0, r.stderr);
      const hits = obj.mapLookup('usdt_hits', u32(0))!.readBigUInt64LE(0);
      assert.ok(hits >= 3n, `only ${hits} gc__begin hits`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------- links and teardown

test('runIterator runs a task iterator once: one record per thread of this process', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject((obj) => {
    obj.setRodata('iter_tgid', i32(process.pid));
    obj.load();
    const buf = obj.runIterator('each_thread');
    assert.equal(buf.length % 8, 0);
    const tids: number[] = [];
    for (let o = 0; o < buf.length; o += 8) {
      assert.equal(buf.readUInt32LE(o + 4), process.pid);
      tids.push(buf.readUInt32LE(o));
    }
    const threads = fs.readdirSync('/proc/self/task').map(Number);
    assert.deepEqual(tids.sort((a, b) => a - b), threads.sort((a, b) => a - b));
    // a second run reads again, not the end of the first
    assert.equal(obj.runIterator('each_thread').length, buf.length);
    assert.throws(() => obj.runIterator('on_exec_btf'), (e) => assertBpfError(e, 'EINVAL', /^runIterator\(on_exec_btf\)/));
    assert.throws(() => obj.runIterator('no_such_program'), /runIterator\(no_such_program\)/);
  });
});

test('detach of an unknown link throws', async (t) => {
  if (!skipUnlessKernel(t)) return;
  await withObject((obj) => {
    obj.load();
    const link = obj.attach('on_exec_btf');
    obj.detach(link);
    assert.throws(() => obj.detach(link), (e) => assertBpfError(e, 'ENOENT', /^detach\(\d+\): no such link/));
    assert.throws(() => obj.detach(12345), (e) => assertBpfError(e, 'ENOENT'));
  });
});

test('close() is idempotent and unloads every program', async (t) => {
  if (!skipUnlessKernel(t)) return;
  const obj = new addon!.BpfObject(selftestPath);
  obj.load();
  obj.attachTracepoint('on_exec_tp', 'sched', 'sched_process_exec');
  obj.attach('on_exec_btf');
  const rb = obj.openRingBuffer('events', () => {});
  assert.ok(ourLoadedPrograms().length >= 6);
  obj.close();
  obj.close();
  rb.close();
  assert.throws(() => obj.programs(), (e) => assertBpfError(e, 'EBADF', /closed/));
  assert.equal(obj.path, selftestPath);
  // The kernel frees programs asynchronously once the last reference goes.
  assert.ok(await waitFor(() => ourLoadedPrograms().length === 0, 3000), `still loaded: ${ourLoadedPrograms()}`);
});

/** Runs a script in a fresh node with the addon as `addon`, the object path as `objPath`. */
function runChild(body: string, timeoutMs: number) {
  const script = `const addon = require(${JSON.stringify(addonPath)}); const objPath = ${JSON.stringify(selftestPath)};
const { spawn } = require('child_process');
function load() {
  const obj = new addon.BpfObject(objPath);
  const ppid = Buffer.alloc(4); ppid.writeInt32LE(process.pid); obj.setRodata('target_ppid', ppid);
  obj.load();
  obj.attachTracepoint('on_exec_tp', 'sched', 'sched_process_exec');
  return obj;
}
${body}`;
  return spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: timeoutMs });
}

test('an open ring buffer keeps the process alive; closing it lets the process exit', (t) => {
  if (!skipUnlessKernel(t)) return;
  const open = runChild(`const obj = load(); obj.openRingBuffer('events', () => {});`, 1500);
  assert.equal(open.signal, 'SIGTERM', `the process exited by itself: ${open.stderr}`);

  const closed = runChild(
    `const obj = load(); const rb = obj.openRingBuffer('events', () => {});
     setTimeout(() => { rb.close(); console.log('closed'); }, 200);`,
    5000,
  );
  assert.equal(closed.signal, null, 'the process did not exit after close');
  assert.equal(closed.status, 0, closed.stderr);
  assert.equal(closed.stdout.trim(), 'closed');
});

test('closing the object from inside the ring buffer callback', (t) => {
  if (!skipUnlessKernel(t)) return;
  const r = runChild(
    `const obj = load();
     obj.openRingBuffer('events', (batch, offsets) => { obj.close(); console.log('records', offsets.length - 1); });
     spawn('/bin/true'); spawn('/bin/true');`,
    5000,
  );
  assert.equal(r.signal, null, 'the process did not exit');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^records [12]\n$/);
});

test('process.exit() while a busy ring buffer is open exits cleanly', (t) => {
  if (!skipUnlessKernel(t)) return;
  const r = runChild(
    `const obj = load();
     let n = 0;
     obj.openRingBuffer('events', (batch, offsets) => { n += offsets.length - 1; });
     const timer = setInterval(() => { for (let i = 0; i < 20; i++) spawn('/bin/true'); }, 5);
     setTimeout(() => { console.log('events', n > 0); process.exit(0); }, 700);`,
    10000,
  );
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'events true');
});

test('libbpfVersion and numPossibleCpus', (t) => {
  if (!skipUnlessBuilt(t)) return;
  assert.match(addon!.libbpfVersion(), /^\d+\.\d+$/);
  assert.ok(addon!.numPossibleCpus() >= os.cpus().length);
});

/** True once the process is in stopped state ('T' in /proc/PID/stat). */
function isStopped(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] === 'T';
  } catch {
    return false;
  }
}

/** Starts the launcher, waits for its SIGSTOP, continues it; exit code and output. */
async function launch(launcher: string, argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(launcher, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  assert.ok(await waitFor(() => isStopped(child.pid!), 3000), 'the launcher did not stop itself');
  // 'close', not 'exit': the pipes' last bytes (the launcher's error line) may arrive after the exit
  const closed = once(child, 'close');
  process.kill(child.pid!, 'SIGCONT');
  const [code] = await closed;
  return { code, out, err };
}

test('ebpf-studio-launch stops itself, then runs the command on SIGCONT', async (t) => {
  const launcher = path.join(repoRoot, 'native/build/Release/ebpf-studio-launch');
  if (!fs.existsSync(launcher)) return t.skip(`${launcher} is not built`);
  assert.deepEqual(await launch(launcher, ['/bin/echo', 'launched']), { code: 0, out: 'launched\n', err: '' });
  assert.deepEqual(await launch(launcher, ['/nonexistent/command']), {
    code: 127,
    out: '',
    err: 'ebpf-studio-launch: cannot run /nonexistent/command: No such file or directory\n',
  });
});
