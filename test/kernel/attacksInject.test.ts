// Attacks on memleak's inject mode by an unprivileged user the test creates (alice, holding only
// the helper), against the root-owned install: the target exec'ing a setuid-root program between
// the helper's check and the injector's attach while a link to a root file is renamed over the
// table's name; a root daemon with one thread switched to alice and a worker still root; links
// at the table's and the settings' names for the interposer itself, in preload and inject mode;
// a process whose filtered thread's sibling execs a setuid-root program the moment root holds that
// thread to read its seccomp filters.
// Each must leave root's files unchanged and load nothing into a root process, while alice's own
// leak trace through the same helper stays exact.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as proto from '../../extension/protocol/protocol';
import type { MemleakResult } from '../../extension/protocol/memleak';
import { AttackBed, attackSkipReason, makeUser, removeUser, spawnAsUser, type AttackUser, type Helper } from './attackKit';
import { distDir, repoRoot, waitFor } from '../helpers';

const TAG = process.pid % 100000;
const SETUID = ['/usr/bin/sudo', '/usr/bin/su', '/usr/bin/passwd'].find((f) => {
  try {
    const st = fs.statSync(f);
    return st.uid === 0 && (st.mode & 0o4000) !== 0;
  } catch {
    return false;
  }
});
const lib = path.join(distDir, 'libebpf-studio-preload.so');
const injector = path.join(distDir, 'ebpf-studio-inject');
const fixtures = path.join(repoRoot, 'test/fixtures/c');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function skipReason(): string | undefined {
  const why = attackSkipReason(['gcc']);
  if (why) return why;
  if (!fs.existsSync(lib) || !fs.existsSync(injector)) return 'the leak interposer or the injector is not built: node scripts/build.mjs';
  if (!SETUID) return 'no setuid-root program (sudo, su, passwd) to exec';
  return undefined;
}
const skip = skipReason();

let bed: AttackBed;
let alice: AttackUser | undefined;
const bins: Record<string, string> = {};

/** Options of memleak --pid PID --mode inject. */
const injectOptions = (pid: number) => ({ pid, mode: 'inject', kernel: false, minAgeMs: 0, sampleRate: 1, minSize: 0, maxSize: 0, top: 50, intervalS: 1 });

/** Starts an inject session: its id, or the helper's error message. */
async function startInject(h: Helper, pid: number): Promise<{ id?: string; error?: string }> {
  try {
    const r = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'memleak', options: injectOptions(pid) } as never)) as proto.SessionStartResult;
    return { id: r.sessionId };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

const status = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
};
const euid = (pid: number) => Number(/^Uid:\s+\d+\s+(\d+)/m.exec(status(pid))?.[1] ?? -1);
/** Whether the interposer is mapped in the process (read as root). */
const injected = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/maps`, 'utf8').includes('libebpf-studio-preload');
  } catch {
    return false;
  }
};
const startTime = (pid: number) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[19];

function lineReader(child: ChildProcess): { out: () => string; next: (re: RegExp, ms?: number) => Promise<RegExpExecArray> } {
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return {
    out: () => out,
    async next(re, ms = 15_000) {
      assert.ok(await waitFor(() => re.test(out), ms), `expected ${re} from the program: ${out}`);
      return re.exec(out)!;
    },
  };
}

async function killAndReap(child: ChildProcess, pid?: number): Promise<void> {
  if (pid) spawnSync('kill', ['-KILL', String(pid)]);
  if (child.exitCode === null && child.signalCode === null) {
    const done = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await done;
  }
}

function build(name: string, src: string, extra: string[] = []): string {
  const out = path.join(bed.base, name);
  const r = spawnSync('gcc', ['-O0', '-g', '-o', out, src, ...extra], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  fs.chmodSync(out, 0o755);
  return out;
}

describe('attacks on memleak inject mode (kernel)', { skip }, () => {
  before(() => {
    bed = new AttackBed('inject');
    alice = makeUser(`ebpfI${TAG}`);
    bins.race = build('inject_race', path.join(fixtures, 'inject_race.c'));
    bins.mixed = build('inject_mixed', path.join(fixtures, 'inject_mixed.c'), ['-lpthread']);
    bins.leaky = build('leaky', path.join(fixtures, 'leaky.c'), ['-fno-omit-frame-pointer']);
    bins.seccomp = build('seccomp_exec', path.join(fixtures, 'seccomp_exec.c'), ['-lpthread']);
  });

  after(() => {
    bed?.dispose();
    removeUser(alice);
  });

  test(`item 1: the target execs ${SETUID} between the helper's check and the attach while a link to a root file is renamed over the table's name, 8 rounds: root's file unchanged, nothing loaded into the root process`, { timeout: 240_000 }, async (t) => {
    const victim = bed.victim('race-victim', 'ROOT_ONLY_RACE_VICTIM\n'.repeat(100));
    const before = bed.fingerprint();
    const h = bed.helperFor(alice!);
    const outcomes: string[] = [];
    let becameRoot = 0;
    try {
      // delays after the session folder appears (it is made right after the helper's check):
      // early and late in the injector's run; -1: no exec at all, only the link over the table
      for (const delay of [0, 5, 20, 50, 100, 200, 400, -1]) {
        const attacker = spawnAsUser(alice!, [bins.race, victim, SETUID!, String(delay < 0 ? 600_000 : delay)], {}, bed.children);
        const io = lineReader(attacker);
        const pid = Number((await io.next(/pid (\d+)/))[1]);
        const r = await startInject(h, pid);
        await io.next(/renamed \d+/, 20_000).catch(() => undefined);
        await sleep(delay < 0 ? 0 : Math.max(300, delay + 200)); // the exec has happened
        const root = euid(pid) === 0;
        becameRoot += root ? 1 : 0;
        const loaded = injected(pid);
        if (r.id) await h.conn.sendRequest(proto.sessionStop, { sessionId: r.id }).catch(() => undefined);
        const what = `delay ${delay} ms: target euid ${euid(pid)}, ${/renamed \d+/.exec(io.out())?.[0] ?? 'no renames'}; helper: ${r.error ? r.error.slice(0, 300) : 'injected (before the exec)'}`;
        outcomes.push(what);
        t.diagnostic(what);
        assert.ok(!(root && loaded), `round ${what}: the interposer is loaded in a root process`);
        assert.deepEqual(bed.fingerprint(), before, `round ${what}: root's file changed`);
        await killAndReap(attacker, pid);
      }
    } finally {
      await h.close();
    }
    assert.ok(becameRoot >= 5, `the target became root (exec'd ${SETUID}) in most rounds: ${outcomes.join('\n')}`);
    assert.deepEqual(bed.fingerprint(), before, "root's file kept its content, owner and mode");
  });

  test("item 2: a root process whose main thread switched to alice while a worker thread stays root: the helper refuses, the injector itself refuses too, nothing changes", { timeout: 60_000 }, async (t) => {
    const before = bed.fingerprint();
    const daemon = spawn(bins.mixed, [String(alice!.uid), String(alice!.gid)], { stdio: ['ignore', 'pipe', 'pipe'] });
    bed.children.push(daemon);
    const io = lineReader(daemon);
    await io.next(/ready/);
    const pid = daemon.pid!;
    const h = bed.helperFor(alice!);
    try {
      assert.equal(euid(pid), alice!.uid, 'the main thread runs as alice');
      const r = await startInject(h, pid);
      t.diagnostic(`helper: ${r.error ?? 'started'}`);
      assert.equal(r.id, undefined, 'the helper injected into a process with a root thread');
      assert.match(r.error ?? '', /thread \d+ of process \d+ runs with other ids/);
      // the injector as if the helper's check had passed: its own check refuses
      const dir = bed.userDir(alice!, 'mixed-session', 0o700);
      const run = spawnSync(injector, ['start', String(pid), String(alice!.uid), String(alice!.gid), startTime(pid), fs.realpathSync(lib), path.join(dir, 'settings')], { encoding: 'utf8', timeout: 30_000 });
      t.diagnostic(`injector: exit ${run.status}: ${run.stderr.trim()}`);
      assert.equal(run.status, 1);
      assert.match(run.stderr, /refusing process \d+: thread \d+ runs with uids 0\/0\/0\/0 and gids 0\/0\/0\/0/);
      assert.equal(injected(pid), false, 'nothing was loaded');
      assert.equal(daemon.exitCode, null, 'the daemon runs on');
    } finally {
      await h.close();
      await killAndReap(daemon);
    }
    assert.deepEqual(bed.fingerprint(), before);
  });

  test('a link at the table name or the settings name: the interposer refuses it in preload and inject mode (a root process, links to a root file and to a name that would be created)', { timeout: 90_000 }, async (t) => {
    const victim = bed.victim('link-victim', 'ROOT_ONLY_LINK_VICTIM\n');
    const created = path.join(bed.base, 'root-only', 'created-through-link');
    const before = bed.fingerprint();
    const aliceDir = bed.userDir(alice!, 'alice-session', 0o700);
    const rootDir = path.join(bed.base, 'root-session');
    fs.mkdirSync(rootDir, { mode: 0o700 });
    // preload mode: a root program whose table name is a link (planted by alice in her folder, or in a root folder)
    const preload = (dir: string, target: string | undefined) => {
      const r = spawnSync('/bin/sh', ['-c', `${target ? `ln -sf "${target}" "${dir}/$$.leak"; ` : `rm -f "${dir}/$$.leak"; `}echo $$; exec env LD_PRELOAD=${lib} EBPF_STUDIO_PRELOAD_DIR=${dir} /bin/ls /`], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const pid = r.stdout.split('\n')[0];
      const table = path.join(dir, `${pid}.leak`);
      const st = fs.lstatSync(table, { throwIfNoEntry: false });
      return { link: st?.isSymbolicLink() ?? false, size: st?.isFile() ? st.size : -1, table };
    };
    for (const [name, dir, target] of [
      ["alice's folder, link to root's file", aliceDir, victim],
      ['a root folder, link to root\'s file', rootDir, victim],
      ['a root folder, link to a name that does not exist', rootDir, created],
    ] as const) {
      const r = preload(dir, target);
      t.diagnostic(`preload, ${name}: table ${r.link ? 'still the link' : `size ${r.size}`}`);
      assert.equal(r.link, true, `preload, ${name}: the link stays as planted`);
      assert.deepEqual(bed.fingerprint(), before, `preload, ${name}: root's file changed`);
      assert.equal(fs.existsSync(created), false, `preload, ${name}: a file was created through the link`);
    }
    const ok = preload(rootDir, undefined);
    assert.ok(ok.size > 0, 'control: with no link, the root program made its table in its own folder');
    // alice's folder for a root program: refused even without a link
    const inAlice = preload(aliceDir, undefined);
    assert.equal(inAlice.size, -1, 'a root program makes no table in a folder of another user');

    // inject mode: a root program, the injector run as root for it (uid 0), the session folder
    // holding a link at the table's or the settings' name
    const target = spawn(bins.leaky, ['--wait'], { stdio: ['pipe', 'pipe', 'pipe'] });
    bed.children.push(target);
    const io = lineReader(target);
    await io.next(/ready/);
    const pid = target.pid!;
    const inject = (dir: string) =>
      spawnSync(injector, ['start', String(pid), '0', '0', startTime(pid), fs.realpathSync(lib), path.join(dir, 'settings')], { encoding: 'utf8', timeout: 30_000 });
    const settingsText = `EBPF_STUDIO_PRELOAD_DIR=${rootDir}\nEBPF_STUDIO_PRELOAD_MAX_OUTSTANDING=10000\n`;
    const reset = (dir: string) => {
      for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f), { force: true });
    };
    try {
      const cases: [string, () => void, string][] = [
        ['link at the table name', () => (fs.writeFileSync(path.join(rootDir, 'settings'), settingsText), fs.symlinkSync(victim, path.join(rootDir, `${pid}.leak`))), 'ok 4'],
        ['dangling link at the table name', () => (fs.writeFileSync(path.join(rootDir, 'settings'), settingsText), fs.symlinkSync(created, path.join(rootDir, `${pid}.leak`))), 'ok 4'],
        ['no table made by the tracer', () => fs.writeFileSync(path.join(rootDir, 'settings'), settingsText), 'ok 4'],
        ['link at the settings name', () => {
          fs.writeFileSync(path.join(bed.base, 'root-only', 'settings-real'), settingsText);
          fs.symlinkSync(path.join(bed.base, 'root-only', 'settings-real'), path.join(rootDir, 'settings'));
          fs.writeFileSync(path.join(rootDir, `${pid}.leak`), '');
        }, 'ok 2'],
      ];
      for (const [name, plant, expect] of cases) {
        reset(rootDir);
        plant();
        const r = inject(rootDir);
        t.diagnostic(`inject, ${name}: exit ${r.status}: ${(r.stdout + r.stderr).trim()}`);
        assert.equal(r.stdout.trim(), expect, `inject, ${name}: ${r.stderr}`);
        assert.deepEqual(bed.fingerprint(), before, `inject, ${name}: root's file changed`);
        assert.equal(fs.existsSync(created), false, `inject, ${name}: a file was created through the link`);
      }
      // the settings in alice's folder for a root process: refused (the folder is not the process's)
      reset(aliceDir);
      fs.writeFileSync(path.join(aliceDir, 'settings'), settingsText.replace(rootDir, aliceDir));
      fs.chownSync(path.join(aliceDir, 'settings'), alice!.uid, alice!.gid);
      const foreign = inject(aliceDir);
      assert.equal(foreign.stdout.trim(), 'ok 2', `settings in another user's folder: ${foreign.stderr}`);
      // control: the tracer's own empty table in a folder of the process's user
      reset(rootDir);
      fs.writeFileSync(path.join(rootDir, 'settings'), settingsText);
      fs.writeFileSync(path.join(rootDir, `${pid}.leak`), '', { mode: 0o600 });
      const good = inject(rootDir);
      assert.equal(good.stdout.trim(), 'ok 0', `control: ${good.stderr}`);
      assert.ok(fs.statSync(path.join(rootDir, `${pid}.leak`)).size > 0, 'control: the table is in use');
      const stop = spawnSync(injector, ['stop', String(pid), '0', '0', startTime(pid), fs.realpathSync(lib)], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(stop.status, 0, stop.stderr);
    } finally {
      await killAndReap(target);
    }
    assert.deepEqual(bed.fingerprint(), before);
  });

  test(`seccomp: a thread under a filter of alice's own, watched by its sibling, which execs ${SETUID} the moment root holds that thread to read its filters, 5 rounds: nothing loaded into the root process, left neither traced nor stopped, root's files unchanged`, { timeout: 120_000 }, async (t) => {
    const before = bed.fingerprint();
    const h = bed.helperFor(alice!);
    const outcomes: string[] = [];
    let becameRoot = 0;
    try {
      for (const delayUs of [0, 20, 200, 2000, 20_000]) {
        const attacker = spawnAsUser(alice!, [bins.seccomp, 'race', SETUID!, String(delayUs)], {}, bed.children);
        const io = lineReader(attacker);
        const pid = Number((await io.next(/pid (\d+)/))[1]);
        const r = await startInject(h, pid);
        await io.next(/exec/, 2000).catch(() => undefined);
        await sleep(300);
        const st = status(pid);
        const root = euid(pid) === 0;
        becameRoot += root ? 1 : 0;
        const loaded = injected(pid);
        if (r.id) await h.conn.sendRequest(proto.sessionStop, { sessionId: r.id }).catch(() => undefined);
        const what = `delay ${delayUs} us: target euid ${euid(pid)}, ${/^State:.*$/m.exec(st)?.[0]}, ${/^TracerPid:.*$/m.exec(st)?.[0]}; helper: ${r.error ? r.error.slice(0, 300) : 'injected (before the exec)'}`;
        outcomes.push(what);
        t.diagnostic(what);
        assert.ok(!(root && loaded), `round ${what}: the interposer is loaded in a root process`);
        assert.match(st, /^TracerPid:\s+0$/m, `round ${what}: left traced`);
        assert.doesNotMatch(st, /^State:\s+[tT]/m, `round ${what}: left stopped`);
        assert.deepEqual(bed.fingerprint(), before, `round ${what}: root's file changed`);
        await killAndReap(attacker, pid);
      }
    } finally {
      await h.close();
    }
    assert.ok(becameRoot >= 3, `the target became root (exec'd ${SETUID}) while held: ${outcomes.join('\n')}`);
    assert.deepEqual(bed.fingerprint(), before, "root's file kept its content, owner and mode");
  });

  test("seccomp: alice's leaky program under a filter of her own: allowing our calls, injected and exact; refusing flock, refused by name and unharmed", { timeout: 90_000 }, async (t) => {
    const leakLine = fs.readFileSync(path.join(fixtures, 'leaky.c'), 'utf8').split('\n').findIndex((l) => l.includes('LEAK-MALLOC')) + 1;
    const work = bed.userDir(alice!, 'seccomp-work');
    const h = bed.helperFor(alice!);
    try {
      for (const deny of [-1, 73]) {
        const prog = spawnAsUser(alice!, [bins.seccomp, 'wrap', String(deny), bins.leaky, '--wait'], { cwd: work }, bed.children);
        const io = lineReader(prog);
        await io.next(/ready/);
        assert.match(status(prog.pid!), /^Seccomp:\s+2$/m);
        const r = await startInject(h, prog.pid!);
        if (deny === 73) {
          t.diagnostic(`a filter refusing flock: ${r.error}`);
          assert.equal(r.id, undefined, 'injected despite a filter refusing flock');
          assert.match(r.error ?? '', /seccomp filter of process \d+ \(thread \d+\) returns ERRNO 1 for flock/);
          assert.equal(injected(prog.pid!), false);
          prog.stdin!.write('\n');
          await io.next(/leaked/);
          prog.stdin!.write('\n');
          assert.equal(await new Promise((res) => prog.once('exit', res)), 0, 'the program ran on and ended well');
          continue;
        }
        assert.ok(r.id, `alice's own process under an allow-all filter is injected: ${r.error}\n${h.stderr()}`);
        prog.stdin!.write('\n');
        await io.next(/leaked/);
        const res = ((await h.conn.sendRequest(proto.sessionStop, { sessionId: r.id! })) as { result: MemleakResult }).result;
        const at = res.stacks.filter((s) => s.frames.some((f) => f.file?.endsWith('leaky.c') && f.line === leakLine));
        t.diagnostic(`under an allow-all filter: mode ${res.mode}, ${at.reduce((n, s) => n + s.allocations, 0)} allocations, ${at.reduce((n, s) => n + s.bytes, 0)} B at leaky.c:${leakLine}`);
        assert.equal(res.mode, 'inject');
        assert.equal(at.reduce((n, s) => n + s.bytes, 0), 10_000);
        prog.stdin!.write('\n');
        await killAndReap(prog);
      }
    } finally {
      await h.close();
    }
  });

  for (const where of ['', 'in a user namespace of her own (unshare -Ur) ']) {
  test(`control: alice's own leaky program ${where}through the installed helper in inject mode: the leak is exact (10 x 1000 B at LEAK-MALLOC)`, { timeout: 90_000 }, async (t) => {
    const leakLine = fs.readFileSync(path.join(fixtures, 'leaky.c'), 'utf8').split('\n').findIndex((l) => l.includes('LEAK-MALLOC')) + 1;
    const work = bed.userDir(alice!, 'leak-work');
    // in a namespace: unshare execs the program (same pid), which holds every capability there only
    const prog = spawnAsUser(alice!, where ? ['unshare', '-Ur', bins.leaky, '--wait'] : [bins.leaky, '--wait'], { cwd: work }, bed.children);
    const io = lineReader(prog);
    await io.next(/ready/);
    const h = bed.helperFor(alice!);
    try {
      if (where) assert.notEqual(fs.readlinkSync(`/proc/${prog.pid}/ns/user`), fs.readlinkSync('/proc/self/ns/user'));
      const r = await startInject(h, prog.pid!);
      assert.ok(r.id, `alice's own process is injected: ${r.error}\n${h.stderr()}`);
      prog.stdin!.write('\n');
      await io.next(/leaked/);
      const stopped = (await h.conn.sendRequest(proto.sessionStop, { sessionId: r.id! })) as { result: MemleakResult };
      const res = stopped.result;
      assert.equal(res.mode, 'inject');
      const at = res.stacks.filter((s) => s.frames.some((f) => f.file?.endsWith('leaky.c') && f.line === leakLine));
      const bytes = at.reduce((n, s) => n + s.bytes, 0);
      const count = at.reduce((n, s) => n + s.allocations, 0);
      t.diagnostic(`alice's inject leak trace: ${count} x ${bytes / Math.max(count, 1)} B at leaky.c:${leakLine}`);
      assert.equal(bytes, 10_000, `leaky.c:${leakLine} leaks 10 x 1000 B: ${JSON.stringify(res.stacks.slice(0, 3)).slice(0, 800)}`);
      assert.equal(count, 10);
      prog.stdin!.write('\n');
    } finally {
      await h.close();
      await killAndReap(prog);
    }
  });
  }
});
