// What a non-root requester may see of a result (sys/symbolize/visibility.ts), on made-up
// processes, files and sysctls: no addresses of others' processes, no symbols of files it cannot
// read, kernel addresses only where kallsyms would show them; its own processes and root untouched.
import assert from 'node:assert/strict';
import type fs from 'node:fs';
import { describe, test } from 'node:test';
import { Visibility, type VisibilitySources } from '../../extension/sys/symbolize/visibility';
import type { ProfileResult } from '../../extension/protocol/profile';
import type { MemleakResult } from '../../extension/protocol/memleak';

const ALICE = 1001;
const ROOT_PID = 10;
const ALICE_PID = 20;

function stat(kind: 'dir' | 'file', uid: number, gid: number, mode: number): fs.Stats {
  return { uid, gid, mode, isDirectory: () => kind === 'dir', isFile: () => kind === 'file' } as fs.Stats;
}

const files: Record<string, fs.Stats> = {
  '/': stat('dir', 0, 0, 0o755),
  '/usr': stat('dir', 0, 0, 0o755),
  '/usr/lib': stat('dir', 0, 0, 0o755),
  '/usr/lib/libc.so.6': stat('file', 0, 0, 0o755),
  '/opt': stat('dir', 0, 0, 0o755),
  '/opt/secret': stat('file', 0, 0, 0o700),
  '/opt/team': stat('file', 0, 50, 0o750),
  '/vault': stat('dir', 0, 0, 0o700),
  '/vault/bin': stat('file', 0, 0, 0o755),
  '/home': stat('dir', 0, 0, 0o755),
  '/home/alice': stat('dir', ALICE, ALICE, 0o700),
  '/home/alice/app': stat('file', ALICE, ALICE, 0o755),
};

/** start (clock ticks since boot) of the made-up processes; 40 started late in a session begun at 1000 */
const starts: Record<number, number> = { [ROOT_PID]: 100, [ALICE_PID]: 200, 30: 300, 40: 990 };

function sources(over: Partial<{ kptr: number; paranoid: number }> = {}): VisibilitySources {
  return {
    processStart: (pid) => starts[pid],
    sysctl: (n) => (n === 'kptr_restrict' ? (over.kptr ?? 1) : (over.paranoid ?? 2)),
    passwd: () => `root:x:0:0::/root:/bin/sh\nalice:x:${ALICE}:${ALICE}::/home/alice:/bin/sh\n`,
    group: () => 'team:x:50:alice\nother:x:60:bob\n',
    processUids: (pid) => (pid === ROOT_PID ? [0, 0, 0, 0] : pid === ALICE_PID || pid === 40 ? [ALICE, ALICE, ALICE, ALICE] : pid === 30 ? [ALICE, 0, 0, 0] : undefined),
    lstat: (f) => files[f.length > 1 ? f.replace(/\/$/, '') : f],
    processRoot: () => '',
  };
}

const SECRET = '0x5345435245543432';

function profile(): ProfileResult {
  const frame = (address: string, module: string | null, fn: string | null, extra: object = {}) => ({ address, module, function: fn, file: fn ? '/src/x.c' : null, line: fn ? 7 : null, kind: 'native' as const, ...extra });
  return {
    tracer: 'profile',
    frequency: 99,
    samples: 3,
    lost: 0,
    buildIds: { '/opt/secret': 'aa', '/usr/lib/libc.so.6': 'bb', '[kernel]': 'cc' },
    stacks: [
      {
        count: 2,
        pid: ROOT_PID,
        tid: ROOT_PID,
        comm: 'secretd',
        frames: [
          { address: '0xffffffff81000010', module: '[kernel]', function: 'do_syscall_64', file: null, line: null, kind: 'kernel' },
          frame('0x401000', '/opt/secret', 'inner_fn', { inlined: true }),
          frame('0x401000', '/opt/secret', 'root_secret_fn', { offset: '0x1000' }),
          frame('0x7f0000001000', '/usr/lib/libc.so.6', '__libc_start_main', { offset: '0x2000' }),
          frame('0x7f0000002000', '/usr/lib/libc.so.6', null, { offset: '0x3000' }),
          frame('0x401100', '/vault/bin', 'hidden_fn', { offset: '0x1100' }),
          frame('0x401200', '/opt/team', 'team_fn', { offset: '0x1200' }),
          frame(SECRET, null, null),
        ],
      },
      { count: 1, pid: ALICE_PID, tid: ALICE_PID, comm: 'app', frames: [frame('0x555500001000', '/home/alice/app', 'alice_fn', { offset: '0x1000' }), frame('0xdead', null, null)] },
    ],
  };
}

describe('what a requester may see', () => {
  test('root sees the document itself', () => {
    const doc = profile();
    assert.equal(new Visibility({ uid: 0 }, sources()).shape(doc), doc);
  });

  test("another user's process: no addresses, no symbols of unreadable files, module only when reachable", () => {
    const out = new Visibility({ uid: ALICE }, sources()).shape(profile());
    const json = JSON.stringify(out);
    for (const bad of [SECRET, String(BigInt(SECRET)), 'root_secret_fn', 'inner_fn', 'hidden_fn', '/vault/bin', '0xffffffff81000010', '0x7f0000001000', '"aa"']) {
      assert.ok(!json.includes(bad), `${bad} leaked: ${json}`);
    }
    const [k, secret, libc, libcNoName, vault, team, garbage] = out.stacks[0].frames;
    assert.deepEqual(k, { address: '0x0', module: '[kernel]', function: 'do_syscall_64', file: null, line: null, kind: 'kernel' });
    assert.deepEqual(secret, { address: '0x0', module: '/opt/secret', function: null, file: null, line: null, kind: 'native' }, 'path visible, file unreadable: the inlined frame goes too');
    assert.equal(libc.function, '__libc_start_main');
    assert.equal(libc.offset, '0x2000');
    assert.equal(libc.address, '0x0');
    assert.equal(libcNoName.offset, '0x3000', 'a readable module keeps module+offset');
    assert.deepEqual(vault, { address: '0x0', module: null, function: null, file: null, line: null, kind: 'native' });
    assert.equal(team.function, 'team_fn', 'readable through a supplementary group');
    assert.deepEqual(garbage, { address: '0x0', module: null, function: null, file: null, line: null, kind: 'native' });
    assert.deepEqual(out.buildIds, { '/usr/lib/libc.so.6': 'bb', '[kernel]': 'cc' });
  });

  test("the requester's own process keeps everything but kernel addresses", () => {
    const out = new Visibility({ uid: ALICE }, sources()).shape(profile());
    assert.deepEqual(out.stacks[1], profile().stacks[1]);
  });

  test('a process with any uid not the requester (setuid) is not its own; a gone one neither', () => {
    const v = new Visibility({ uid: ALICE }, sources());
    assert.equal(v.ownsProcess(ALICE_PID), true);
    assert.equal(v.ownsProcess(30), false);
    assert.equal(v.ownsProcess(99), false);
  });

  test("a pid that may have been another process's during the session is not the requester's, unless the session pins it", () => {
    assert.equal(new Visibility({ uid: ALICE }, sources(), { startTicks: 1000 }).ownsProcess(ALICE_PID), true, 'ran before the session');
    assert.equal(new Visibility({ uid: ALICE }, sources(), { startTicks: 1000 }).ownsProcess(40), false, 'started during the session');
    const seen = new Map<number, { start: number; owned: boolean }>();
    assert.equal(new Visibility({ uid: ALICE }, sources(), { startTicks: 1000, pinned: [40], seen }).ownsProcess(40), true, 'a pinned target');
    // The target exits and root's process takes its pid: judged by what the target was.
    const reused = { ...sources(), processStart: (pid: number) => (pid === 40 ? 1500 : starts[pid]), processUids: () => [0, 0, 0, 0] };
    assert.equal(new Visibility({ uid: ALICE }, reused, { startTicks: 1000, pinned: [40], seen }).ownsProcess(40), true);
    const gone = { ...sources(), processStart: () => undefined, processUids: () => undefined };
    assert.equal(new Visibility({ uid: ALICE }, gone, { startTicks: 1000, pinned: [40], seen }).ownsProcess(40), true, 'gone: what it was');
    // A root target whose pid then goes to the requester stays root's.
    const rootSeen = new Map<number, { start: number; owned: boolean }>();
    assert.equal(new Visibility({ uid: ALICE }, sources(), { startTicks: 1000, pinned: [ROOT_PID], seen: rootSeen }).ownsProcess(ROOT_PID), false);
    const taken = { ...sources(), processStart: () => 1500, processUids: () => [ALICE, ALICE, ALICE, ALICE] };
    assert.equal(new Visibility({ uid: ALICE }, taken, { startTicks: 1000, pinned: [ROOT_PID], seen: rootSeen }).ownsProcess(ROOT_PID), false);
    // A target that became another user's (setuid exec) stays not the requester's.
    const setuid = { ...sources(), processUids: (pid: number) => (pid === 40 ? [ALICE, 0, 0, 0] : undefined) };
    const s2 = new Map<number, { start: number; owned: boolean }>();
    assert.equal(new Visibility({ uid: ALICE }, sources(), { startTicks: 1000, pinned: [40], seen: s2 }).ownsProcess(40), true);
    assert.equal(new Visibility({ uid: ALICE }, setuid, { startTicks: 1000, pinned: [40], seen: s2 }).ownsProcess(40), false);
    assert.equal(new Visibility({ uid: ALICE }, sources(), { startTicks: 1000, pinned: [40], seen: s2 }).ownsProcess(40), false);
  });

  test('kernel addresses follow kallsyms: shown with kptr_restrict 0 and perf_event_paranoid <= 1 only', () => {
    assert.equal(new Visibility({ uid: ALICE }, sources({ kptr: 0, paranoid: 1 })).kernelAddresses, true);
    assert.equal(new Visibility({ uid: ALICE }, sources({ kptr: 0, paranoid: 2 })).kernelAddresses, false);
    assert.equal(new Visibility({ uid: ALICE }, sources({ kptr: 1, paranoid: -1 })).kernelAddresses, false);
    const out = new Visibility({ uid: ALICE }, sources({ kptr: 0, paranoid: 1 })).shape(profile());
    assert.equal(out.stacks[0].frames[0].address, '0xffffffff81000010');
  });

  test('memleak frames (no kind, module always a string) and the one target as default pid', () => {
    const doc: MemleakResult = {
      tracer: 'memleak',
      pid: ROOT_PID,
      dropped: 0,
      lost: 0,
      stacks: [
        {
          bytes: 8,
          allocations: 1,
          oldestAgeMs: 1,
          frames: [
            { address: '0x401000', module: '/opt/secret', function: 'root_secret_fn', file: '/src/s.c', line: 3, inlined: [{ function: 'x' }] },
            { address: SECRET, module: '[unknown]' },
          ],
        },
      ],
    };
    const out = new Visibility({ uid: ALICE }, sources()).shape(doc);
    assert.deepEqual(out.stacks[0].frames, [
      { address: '0x0', module: '/opt/secret', function: '[unknown]' },
      { address: '0x0', module: '[unknown]', function: '[unknown]' },
    ]);
    const update = { atMs: 1, stacks: doc.stacks };
    const mine = new Visibility({ uid: ALICE }, sources()).shape(update, ALICE_PID);
    assert.deepEqual(mine, update);
    assert.equal(new Visibility({ uid: ALICE }, sources()).shape(update, ROOT_PID).stacks[0].frames[1].address, '0x0');
  });

  test("a latency slow call's stack is cut like any frames", () => {
    const doc = { tracer: 'latency', pid: ROOT_PID, slow: [{ durationNs: 5, tid: ROOT_PID, stack: [{ address: SECRET, module: '/opt/secret', function: 'root_secret_fn', file: '/src/s.c', line: 3 }] }], note: { stack: 'text' } };
    const out = new Visibility({ uid: ALICE }, sources()).shape(doc);
    assert.deepEqual(out.slow[0].stack, [{ address: '0x0', module: '/opt/secret', function: '[unknown]' }]);
    assert.deepEqual(out.note, { stack: 'text' }, 'a "stack" that is not frames is left alone');
    assert.deepEqual(new Visibility({ uid: ALICE }, sources()).shape({ ...doc, pid: ALICE_PID }).slow, doc.slow);
  });

  test('odd paths are judged unreadable', () => {
    const v = new Visibility({ uid: ALICE }, sources());
    for (const p of ['relative/x', '/usr/lib/../lib/libc.so.6', '/usr//lib/libc.so.6', '/nope/x', '/usr/lib/libc.so.6 (deleted)']) assert.equal(v.moduleAccess(p), 'none', p);
    assert.equal(v.moduleAccess('/usr/lib/libc.so.6'), 'read');
    assert.equal(v.moduleAccess('/opt/secret'), 'path');
  });

  test('warnings name only paths the requester could look up itself', () => {
    const v = new Visibility({ uid: ALICE }, sources());
    const doc = { warnings: ['no debug info in /vault/bin: its frames show module+offset (rebuild with -g)', 'cannot open /opt/secret (EACCES).', 'see https://example.org/a/b and /usr/lib/missing.so'] };
    assert.deepEqual(v.shape(doc).warnings, [
      'no debug info in [a path you cannot see]: its frames show module+offset (rebuild with -g)',
      'cannot open /opt/secret (EACCES).',
      'see https://example.org/a/b and /usr/lib/missing.so',
    ]);
    assert.equal(v.message('/vault/x/../bin'), '[a path you cannot see]');
    assert.equal(new Visibility({ uid: 0 }, sources()).message('/vault/bin'), '/vault/bin');
  });
});
