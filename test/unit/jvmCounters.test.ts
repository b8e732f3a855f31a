// HotSpot's hsperfdata parsed within its bounds, the verdict of java-gc's count against the JVM's
// own, and the overlay layer lookup that names the file a container's uprobe really lands on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gcCollectors, parseHsperfdata } from '../../extension/sys/jvm/hsperfdata';
import { checkJvmCount, countsProblem, kindsOfCounter } from '../../extension/model/javaGcCheck';
import { overlayLayers, parseMountinfo, splitDev } from '../../extension/sys/proc/mappedFile';
import type { JavaGcKind } from '../../extension/protocol/javaGc';

type Entry = { name: string; long?: bigint; text?: string };

/** An hsperfdata buffer laid out as HotSpot writes it (PerfDataPrologue, then PerfDataEntry records). */
function hsperf(entries: Entry[], le = true): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const name = Buffer.from(e.name + '\0', 'latin1');
    const data = e.long !== undefined ? Buffer.alloc(8) : Buffer.from((e.text ?? '') + '\0', 'utf8');
    if (e.long !== undefined && le) data.writeBigInt64LE(e.long);
    else if (e.long !== undefined) data.writeBigInt64BE(e.long);
    const dataOff = Math.ceil((20 + name.length) / 8) * 8;
    const len = Math.ceil((dataOff + data.length) / 8) * 8;
    const b = Buffer.alloc(len);
    const w = (v: number, o: number) => (le ? b.writeInt32LE(v, o) : b.writeInt32BE(v, o));
    w(len, 0);
    w(20, 4);
    w(e.long !== undefined ? 0 : data.length, 8);
    b[12] = (e.long !== undefined ? 'J' : 'B').charCodeAt(0);
    w(dataOff, 16);
    name.copy(b, 20);
    data.copy(b, dataOff);
    parts.push(b);
  }
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(32);
  head.writeUInt32BE(0xcafec0c0, 0);
  head[4] = le ? 1 : 0;
  head[5] = 2;
  const w = (v: number, o: number) => (le ? head.writeInt32LE(v, o) : head.writeInt32BE(v, o));
  w(32 + body.length, 8);
  w(32, 24);
  w(entries.length, 28);
  return Buffer.concat([head, body]);
}

const serial: Entry[] = [
  { name: 'sun.rt.createVmBeginTime', long: 123n },
  { name: 'sun.gc.collector.0.name', text: 'Serial young collection pauses' },
  { name: 'sun.gc.collector.0.invocations', long: 19n },
  { name: 'sun.gc.collector.1.name', text: 'Serial full collection pauses' },
  { name: 'sun.gc.collector.1.invocations', long: 2n },
];

test('hsperfdata: collector counters in either byte order', () => {
  for (const le of [true, false]) {
    const c = gcCollectors(parseHsperfdata(hsperf(serial, le)));
    assert.deepEqual(c, [
      { index: 0, name: 'Serial young collection pauses', invocations: 19 },
      { index: 1, name: 'Serial full collection pauses', invocations: 2 },
    ]);
  }
});

test('hsperfdata: a bad file is refused or read within its bounds, never past them', () => {
  assert.throws(() => parseHsperfdata(Buffer.alloc(10)), /shorter than its header/);
  assert.throws(() => parseHsperfdata(Buffer.alloc(64)), /bad magic/);
  const good = hsperf(serial);
  // Truncated anywhere: what is whole is read, nothing throws a RangeError.
  for (let n = 32; n < good.length; n += 7) assert.ok(parseHsperfdata(good.subarray(0, n)).size <= serial.length);
  // An entry count far beyond the buffer, and an entry claiming to be longer than the file.
  const huge = Buffer.from(good);
  huge.writeInt32LE(0x7fffffff, 28);
  assert.equal(parseHsperfdata(huge).size, serial.length);
  const long = Buffer.from(good);
  long.writeInt32LE(1 << 30, 32);
  assert.equal(parseHsperfdata(long).size, 0);
  // Offsets inside an entry pointing outside it.
  const wild = Buffer.from(good);
  wild.writeInt32LE(-5, 32 + 16);
  assert.equal(parseHsperfdata(wild).size, 0);
});

const ours = (o: Partial<Record<JavaGcKind, number>>) => new Map(Object.entries(o) as [JavaGcKind, number][]);
const jvm = (young: number, full: number) => [
  { name: 'Serial young collection pauses', invocations: young },
  { name: 'Serial full collection pauses', invocations: full },
];

test('the count against the JVM\'s: equal agrees; nothing seen while the JVM collected is an error naming the cause', () => {
  const ok = checkJvmCount({ pid: 7, ours: ours({ young: 19, full: 2 }), jvm: jvm(19, 2), minUs: 0, lost: 0 });
  assert.equal(ok.verdict, 'agree');
  assert.equal(ok.message, 'pid 7: counted 21 — the JVM counts 21');
  const silent = checkJvmCount({ pid: 7, ours: ours({}), jvm: jvm(19, 0), minUs: 0, lost: 0, attachedTo: '/usr/lib/jvm/x/libjvm.so' });
  assert.equal(silent.verdict, 'missed');
  assert.match(silent.message, /counted 0 — the JVM counts 19: no collection was traced.*another file than the libjvm\.so/);
  assert.match(countsProblem([ok, silent]) ?? '', /^pid 7: counted 0/);
  assert.equal(countsProblem([ok]), undefined);
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ young: 5 }), jvm: jvm(19, 0), minUs: 0, lost: 0 }).verdict, 'missed');
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ young: 15 }), jvm: jvm(19, 0), minUs: 0, lost: 0 }).verdict, 'fewer');
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ young: 40 }), jvm: jvm(19, 0), minUs: 0, lost: 0 }).verdict, 'more');
  // A collection in flight at either edge of the session.
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ young: 20 }), jvm: jvm(19, 0), minUs: 0, lost: 0 }).verdict, 'agree');
  // Events the kernel counted as lost are reported already: a shortfall they explain is no silent one.
  const lossy = checkJvmCount({ pid: 7, ours: ours({ young: 160 }), jvm: jvm(350, 0), minUs: 0, lost: 190 });
  assert.equal(lossy.verdict, 'fewer');
  assert.match(lossy.message, /190 collections were not traced \(190 events were lost: kernel buffer full\)/);
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ young: 10 }), jvm: jvm(350, 0), minUs: 0, lost: 20 }).verdict, 'missed');
});

test('the count against the JVM\'s: --min-us, unreadable counters and non-comparable collectors are said, not errors', () => {
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ young: 2 }), jvm: jvm(19, 0), minUs: 500, lost: 0 }).verdict, 'filtered');
  const unread = checkJvmCount({ pid: 7, ours: ours({ young: 2 }), unreadable: 'started with -XX:-UsePerfData', minUs: 0, lost: 0 });
  assert.equal(unread.verdict, 'unread');
  assert.match(unread.message, /could not be read \(started with -XX:-UsePerfData\)/);
  const z = [{ name: 'Z concurrent cycle pauses', invocations: 30 }];
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ 'concurrent-pause': 27, 'concurrent-cycle': 9 }), jvm: z, minUs: 0, lost: 0 }).verdict, 'loose');
  assert.equal(checkJvmCount({ pid: 7, ours: ours({}), jvm: z, minUs: 0, lost: 0 }).verdict, 'missed');
  // G1's Remark/Cleanup counter is compared with its concurrent pauses.
  assert.deepEqual(kindsOfCounter('G1 concurrent cycle pauses'), ['concurrent-pause']);
  const g1 = [
    { name: 'G1 young collection pauses', invocations: 10 },
    { name: 'G1 full collection pauses', invocations: 1 },
    { name: 'G1 concurrent cycle pauses', invocations: 4 },
  ];
  assert.equal(checkJvmCount({ pid: 7, ours: ours({ young: 10, full: 1, 'concurrent-pause': 4 }), jvm: g1, minUs: 0, lost: 0 }).verdict, 'agree');
});

test('overlay mounts: layers in lookup order, escapes undone; st_dev split as glibc does', () => {
  const text =
    '75 49 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containers/storage/overlay/l/A:/var/lib/containers/storage/overlay/l/B,upperdir=/var/lib/c/u/diff,workdir=/var/lib/c/u/work,uuid=on\n' +
    '77 75 0:43 / /proc rw,nosuid - proc proc rw\n' +
    '80 75 254:0 /srv/my\\040jdk /opt/jdk ro - ext4 /dev/vda1 rw\n';
  const m = parseMountinfo(text);
  assert.equal(m.length, 3);
  assert.deepEqual(overlayLayers(m[0].superOptions), ['/var/lib/c/u/diff', '/var/lib/containers/storage/overlay/l/A', '/var/lib/containers/storage/overlay/l/B']);
  assert.equal(m[2].root, '/srv/my jdk');
  assert.equal(m[2].mountPoint, '/opt/jdk');
  assert.deepEqual(splitDev(0xfe00n), [254, 0]);
  assert.deepEqual(splitDev(0x28n), [0, 40]);
  // makedev(259, 300): minor bits above 8 sit at bit 20.
  assert.deepEqual(splitDev((259n << 8n) | (300n & 0xffn) | ((300n & ~0xffn) << 12n)), [259, 300]);
});

test('the GC view keeps the JVMs\' counts from the updates, through a reload, and shows an error first', async () => {
  const { GcLive } = await import('../../extension/model/javaGcLive');
  const { GcModel } = await import('../../webview/javaGc/model');
  const ok = checkJvmCount({ pid: 1, ours: ours({ young: 3 }), jvm: jvm(3, 0), minUs: 0, lost: 0 });
  const bad = checkJvmCount({ pid: 2, ours: ours({}), jvm: jvm(19, 0), minUs: 0, lost: 0 });
  const live = new GcLive();
  live.apply({ events: [], lost: 0, pids: [1, 2], startNs: 1, nowNs: 2, jvmCounts: [ok, bad] });
  assert.deepEqual(GcLive.from(JSON.parse(JSON.stringify(live.toJSON()))).jvmCounts, [ok, bad]);
  assert.deepEqual(live.toResult().jvmCounts, [ok, bad]);
  live.apply({ events: [], lost: 0, pids: [1, 2], startNs: 1, nowNs: 3 });
  assert.equal(live.jvmCounts.length, 2, 'an update without counts keeps the last ones');
  const m = new GcModel();
  m.restore(live.toJSON());
  const line = m.jvmCountLine();
  assert.ok(line.bad);
  assert.match(line.text, /^pid 2: counted 0 — the JVM counts 19: .* · pid 1: counted 3 — the JVM counts 3$/);
  assert.equal(new GcModel().jvmCountLine().text, '');
});
