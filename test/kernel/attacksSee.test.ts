// What a user may see of other users' processes through the installed helper. Root runs a program
// from a 0700 root-only binary whose hot function points the frame-pointer register at a stack
// buffer holding a secret, so both stack walks (the kernel's frame-pointer walk and CFI from a
// stack copy) read the secret as a return address; a user asks the helper (as sudo starts it for
// them) for machine-wide CPU, off-CPU and wall-clock profiles. Nothing of the secret, of the
// root-only binary's symbols or of kernel addresses (kptr_restrict=1) may reach the user, while
// the user's own program in the same profile keeps its functions and lines, and root's CLI still
// gets everything (which also shows the bed reproduces the leak).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as proto from '../../extension/protocol/protocol';
import type { ProfileResult } from '../../extension/protocol/profile';
import type { MemleakResult } from '../../extension/protocol/memleak';
import { AttackBed, attackSkipReason, asUser, makeUser, removeUser, spawnAsUser, type AttackUser } from './attackKit';
import { runCli, sleep, waitFor } from '../helpers';

const USER = `ebpfsee${process.pid % 100000}`;
const SECRET_HEX = '5345435245543432';
const SECRET_DEC = BigInt(`0x${SECRET_HEX}`).toString();
const KERNEL_ADDRESS = /0xffff[0-9a-f]{12}/i;

// -fno-omit-frame-pointer: the spin's CFI defines its frame by %rbp, so CFI from a stack copy
// reads the secret too; -mno-red-zone: the push in the asm must not land on the buffer.
const ROOT_SRC = String.raw`
#include <stdio.h>
#include <time.h>
__attribute__((noinline)) void root_secret_spin_xyz(unsigned long n) {
  volatile unsigned long frame[4] = { 0, 0x${SECRET_HEX}UL, 0, 0 };
  struct timespec ts = { 0, 1000000 };
  __asm__ volatile(
      "push %%rbp\n\t"
      "mov %[f], %%rbp\n\t"
      "1: sub $1, %[n]\n\t"
      "jnz 1b\n\t"
      "mov $35, %%eax\n\t" /* nanosleep: blocked with the same registers */
      "mov %[ts], %%rdi\n\t"
      "xor %%esi, %%esi\n\t"
      "syscall\n\t"
      "pop %%rbp\n\t"
      : [n] "+r"(n)
      : [f] "r"((void *)frame), [ts] "r"(&ts)
      : "rax", "rdi", "rsi", "rcx", "r11", "memory", "cc");
}
/* malloc called with %rbp on the buffer: the allocation's stack (either walk) reads the secret */
__attribute__((noinline)) void root_secret_alloc_xyz(void) {
  volatile unsigned long frame[4] = { 0, 0x${SECRET_HEX}UL, 0, 0 };
  __asm__ volatile(
      "push %%rbp\n\t"
      "mov %%rsp, %%rbx\n\t"
      "and $-16, %%rsp\n\t"
      "mov %[f], %%rbp\n\t"
      "mov $48, %%edi\n\t"
      "call malloc@PLT\n\t"
      "mov %%rbx, %%rsp\n\t"
      "pop %%rbp\n\t"
      :
      : [f] "r"((void *)frame)
      : "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
}
__attribute__((noinline)) void root_secret_fn_xyz(void) {
  for (;;) {
    root_secret_spin_xyz(20000000UL);
    root_secret_alloc_xyz();
  }
}
int main(void) {
  printf("ready\n");
  fflush(stdout);
  root_secret_fn_xyz();
  return 0;
}
`;

const ALICE_SRC = String.raw`
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) unsigned long alice_own_fn_abc(unsigned long n) {
  volatile unsigned long x = 0;
  for (unsigned long i = 0; i < n; i++) x += i * i;
  return x;
}
__attribute__((noinline)) void alice_sys_fn_abc(int fd) {
  char b[64] = { 0 };
  for (int i = 0; i < 2000; i++) write(fd, b, sizeof b);
  usleep(2000);
}
__attribute__((noinline)) void *alice_alloc_fn_abc(void) {
  return malloc(40);
}
int main(void) {
  int fd = open("/dev/null", O_WRONLY);
  for (;;) {
    alice_own_fn_abc(3000000);
    alice_sys_fn_abc(fd);
    alice_alloc_fn_abc();
  }
}
`;

const skip = attackSkipReason(['gcc']) ?? (process.arch !== 'x64' ? 'the root program is x86-64 assembly' : undefined);

let bed: AttackBed;
let alice: AttackUser | undefined;
let kptrBefore: string | undefined;
const children: ChildProcess[] = [];
let rootPid = 0;
let alicePid = 0;

function compile(src: string, out: string, flags: string[]): void {
  const c = `${out}.c`;
  fs.writeFileSync(c, src);
  const r = spawnSync('gcc', [...flags, '-o', out, c], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  fs.rmSync(c);
}

/** A profile through the installed helper for `u`, with one snapshot on the way: both as sent. */
async function profileAs(u: AttackUser, tracer: 'profile' | 'offcpu', options: object, ms: number): Promise<{ result: ProfileResult; json: string }> {
  const h = bed.helperFor(u);
  try {
    const started = (await h.conn.sendRequest(proto.sessionStart, { tracer, options: { pid: 0, ...options } } as never)) as proto.SessionStartResult;
    await sleep(ms / 2);
    const snap = await h.conn.sendRequest(proto.sessionSnapshot, { sessionId: started.sessionId });
    await sleep(ms / 2);
    const stopped = (await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId })) as { result: ProfileResult };
    await sleep(200);
    return { result: stopped.result, json: JSON.stringify([started, snap, stopped, h.notes]) };
  } finally {
    await h.close();
  }
}

async function memleakAs(u: AttackUser, options: object, ms: number): Promise<{ result: MemleakResult; json: string }> {
  const h = bed.helperFor(u);
  try {
    const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'memleak', options } as never)) as proto.SessionStartResult;
    await sleep(ms);
    const stopped = (await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId })) as { result: MemleakResult };
    await sleep(200);
    return { result: stopped.result, json: JSON.stringify([started, stopped, h.notes]) };
  } finally {
    await h.close();
  }
}

function secretsIn(json: string): string[] {
  const found: string[] = [];
  if (json.toLowerCase().includes(SECRET_HEX.toLowerCase())) found.push(`the secret as hex (${SECRET_HEX})`);
  if (json.includes(SECRET_DEC)) found.push(`the secret as decimal (${SECRET_DEC})`);
  for (const s of ['root_secret_', 'hidden_src']) if (json.includes(s)) found.push(`"${s}" (a symbol or source of the root-only binary)`);
  const k = KERNEL_ADDRESS.exec(json);
  if (k) found.push(`a kernel address (${k[0]})`);
  return found;
}

/** The user's own program is still there, named down to file:line. */
function assertOwnFramesNamed(r: ProfileResult, what: string): void {
  const own = r.stacks.filter((s) => s.pid === alicePid);
  assert.ok(own.length > 0, `${what}: the user's own program was sampled`);
  const named = own.flatMap((s) => s.frames).filter((f) => f.function && /^alice_(own|sys)_fn_abc$/.test(f.function));
  assert.ok(named.length > 0, `${what}: the user's own functions are named`);
  assert.ok(named.some((f) => f.file?.endsWith('alice.c') && (f.line ?? 0) > 0), `${what}: with file:line`);
  assert.ok(named.every((f) => f.address !== '0x0'), `${what}: and addresses (the program ran before the session: its pid was never another's)`);
}

/** Root's process was sampled and reached the user only as [unknown] or its module's path. */
function assertRootProcessCut(r: ProfileResult, what: string): void {
  const theirs = r.stacks.filter((s) => s.pid === rootPid).flatMap((s) => s.frames);
  assert.ok(theirs.length > 0, `${what}: root's program was in the profile`);
  for (const f of theirs) {
    if (f.kind === 'kernel') continue;
    assert.equal(f.address, '0x0', `${what}: no address of root's process: ${JSON.stringify(f)}`);
    if (f.module?.includes('rootbin')) assert.deepEqual([f.function, f.file, f.line, f.offset], [null, null, null, undefined], `${what}: nothing of the unreadable binary but its path`);
  }
}

function assertKernelNamedWithoutAddresses(r: ProfileResult, what: string): void {
  const kernel = r.stacks.flatMap((s) => s.frames).filter((f) => f.kind === 'kernel');
  assert.ok(kernel.some((f) => f.function && !f.function.startsWith('[')), `${what}: kernel frames keep their names`);
  assert.ok(kernel.every((f) => f.address === '0x0'), `${what}: no kernel address`);
}

/** The same profile by root's CLI (sudo ebpf-studio ...): the control, and proof that the bed leaks. */
function rootCli(args: string[]): ProfileResult {
  const r = runCli(['profile', '--all', '--duration', '3', ...args, '--json'], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as ProfileResult;
}

function assertRootSeesAll(doc: ProfileResult, what: string): void {
  const theirs = doc.stacks.filter((s) => s.pid === rootPid).flatMap((s) => s.frames);
  assert.ok(theirs.some((f) => f.address.toLowerCase() === `0x${SECRET_HEX}`), `${what}: the garbage frame the walk read is there (the bed reproduces the leak)`);
  assert.ok(theirs.some((f) => f.function === 'root_secret_spin_xyz' && f.file?.endsWith('hidden_src.c')), `${what}: the root-only symbols with file:line`);
  assert.ok(doc.stacks.some((s) => s.frames.some((f) => f.kind === 'kernel' && KERNEL_ADDRESS.test(f.address))), `${what}: kernel addresses (CAP_SYSLOG)`);
  assertOwnFramesNamed(doc, what);
}

describe('what a user sees of other processes through the installed helper', { skip }, () => {
  before(async () => {
    bed = new AttackBed('see');
    alice = makeUser(USER);
    // The path is reachable (0755 folder), the file is root's alone (0700).
    const rootBin = path.join(bed.base, 'rootbin');
    fs.mkdirSync(rootBin, { mode: 0o755 });
    fs.chmodSync(rootBin, 0o755);
    compile(ROOT_SRC.replace('#include <stdio.h>', '#include <stdio.h>\n#line 1 "hidden_src.c"'), path.join(rootBin, 'secretd'), ['-O1', '-g', '-fno-omit-frame-pointer', '-mno-red-zone']);
    fs.chmodSync(path.join(rootBin, 'secretd'), 0o700);
    const own = bed.userDir(alice, 'alice');
    compile(ALICE_SRC, path.join(own, 'alice'), ['-O0', '-g', '-fno-omit-frame-pointer']);
    fs.chownSync(path.join(own, 'alice'), alice.uid, alice.gid);
    kptrBefore = fs.readFileSync('/proc/sys/kernel/kptr_restrict', 'utf8').trim();
    fs.writeFileSync('/proc/sys/kernel/kptr_restrict', '1');

    const root = spawn(path.join(rootBin, 'secretd'), [], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(root);
    let out = '';
    root.stdout!.on('data', (d) => (out += d));
    await waitFor(() => out.includes('ready'), 10_000);
    rootPid = root.pid!;
    const mine = spawnAsUser(alice, [path.join(own, 'alice')], {}, children);
    alicePid = mine.pid!;
    // setpriv execs the program: the pid is the program's once its exe is the binary.
    await waitFor(() => fs.readlinkSync(`/proc/${alicePid}/exe`).endsWith('/alice'), 10_000);
  });

  after(() => {
    for (const c of children) c.kill('SIGKILL');
    if (kptrBefore !== undefined) fs.writeFileSync('/proc/sys/kernel/kptr_restrict', kptrBefore);
    bed?.dispose();
    removeUser(alice);
  });

  test('the bed: kallsyms shows the user only zeros; the binary is root-only', () => {
    const ks = asUser(alice!, ['head', '-n', '50', '/proc/kallsyms']);
    assert.equal(ks.status, 0, ks.stderr);
    assert.ok(ks.stdout.split('\n').filter(Boolean).every((l) => /^0{16} /.test(l)), `kallsyms as ${USER}: ${ks.stdout.slice(0, 200)}`);
    const cat = asUser(alice!, ['cat', path.join(bed.base, 'rootbin', 'secretd')]);
    assert.notEqual(cat.status, 0, 'the user cannot read the root-only binary');
  });

  for (const unwind of ['fp', 'dwarf', 'cfi'] as const) {
    test(`attack: profile --all --unwind ${unwind} as the user leaks no secret, no root-only symbol, no kernel address; own frames named; root's CLI gets all`, { timeout: 120_000 }, async (t) => {
      assertRootSeesAll(rootCli(['--unwind', unwind, '--frequency', '499']), `root CLI, --unwind ${unwind}`);
      const { result, json } = await profileAs(alice!, 'profile', { frequency: 499, unwind }, 3000);
      assert.deepEqual(secretsIn(json), [], 'what reached the user');
      // the whole host's table log (compiled, kept out) names other users' files by device and inode only
      assert.doesNotMatch(json, /cfi: [^"]*secretd/, 'no root file named in the log');
      if (unwind === 'cfi') assert.match(json, /cfi: file [0-9a-f]+:[0-9a-f]+:\d+ \(device:inode\): \d+ rows compiled/, 'the log it got names files by device and inode');
      assertRootProcessCut(result, `profile ${unwind}`);
      assertKernelNamedWithoutAddresses(result, `profile ${unwind}`);
      assertOwnFramesNamed(result, `profile ${unwind}`);
      t.diagnostic(`${result.samples} samples, ${result.stacks.length} stacks, ${result.stacks.filter((s) => s.pid === rootPid).length} of root's program`);
    });
  }

  for (const event of ['offcpu', 'wall'] as const) {
    test(`attack: profile --all --event ${event} as the user leaks nothing of root's; own frames named; root's CLI gets all`, { timeout: 120_000 }, async (t) => {
      assertRootSeesAll(rootCli(['--event', event]), `root CLI, --event ${event}`);
      const { result, json } = await profileAs(alice!, 'offcpu', { event, frequency: 199 }, 3000);
      assert.deepEqual(secretsIn(json), [], 'what reached the user');
      assertRootProcessCut(result, event);
      assertKernelNamedWithoutAddresses(result, event);
      assertOwnFramesNamed(result, event);
      t.diagnostic(`${result.stacks.length} stacks, ${result.stacks.filter((s) => s.pid === rootPid).length} of root's program`);
    });
  }

  for (const unwind of ['fp', 'dwarf', 'cfi'] as const) {
    test(`attack: memleak --pid of root's program (uprobe, --unwind ${unwind}) as the user leaks nothing of root's; own leaks named; root's CLI gets all`, { timeout: 120_000 }, async () => {
      const r = runCli(['memleak', '--pid', String(rootPid), '--mode', 'uprobe', '--unwind', unwind, '--duration', '3', '--json'], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      const rootDoc = JSON.parse(r.stdout) as MemleakResult;
      const rootFrames = rootDoc.stacks.flatMap((s) => s.frames);
      assert.ok(rootFrames.some((f) => f.address === `0x${SECRET_HEX}`), 'root CLI: the garbage frame the walk read is there (the bed reproduces the leak)');
      assert.ok(rootFrames.some((f) => f.function === 'root_secret_alloc_xyz' && f.file?.endsWith('hidden_src.c')), 'root CLI: the root-only symbols with file:line');

      const theirs = await memleakAs(alice!, { pid: rootPid, mode: 'uprobe', unwind, intervalS: 1 }, 3000);
      assert.deepEqual(secretsIn(theirs.json), [], 'what reached the user');
      const frames = theirs.result.stacks.flatMap((s) => s.frames);
      assert.ok(frames.length > 0, "root's allocations were traced");
      for (const f of frames) {
        assert.equal(f.address, '0x0', `no address of root's process: ${JSON.stringify(f)}`);
        assert.ok(f.function === undefined || f.function === '[unknown]' || !f.module.includes('rootbin'), `nothing of the unreadable binary but its path: ${JSON.stringify(f)}`);
      }

      const mine = await memleakAs(alice!, { pid: alicePid, mode: 'uprobe', unwind, intervalS: 1 }, 3000);
      const own = mine.result.stacks.flatMap((s) => s.frames);
      assert.ok(own.some((f) => f.function === 'alice_alloc_fn_abc' && f.file?.endsWith('alice.c') && (f.line ?? 0) > 0 && f.address !== '0x0'), `the user's own leaks keep names, lines and addresses: ${JSON.stringify(own.slice(0, 4))}`);
    });
  }
});
