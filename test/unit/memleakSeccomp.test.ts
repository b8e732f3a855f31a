// The seccomp filter evaluator that decides whether memleak may inject into a process: filters
// assembled here the way libseccomp and container runtimes lay them out (arch check, allow-list,
// deny-list, argument checks, KILL), each with the verdict the kernel would give.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { AUDIT_ARCH_X86_64, evaluate, filterRefusal, INJECTED_SYSCALLS, parseFilters, SECCOMP_RET_ALLOW, type Insn, type ProcessFilters } from '../../extension/tracers/memleak/seccomp';

const ALLOW = SECCOMP_RET_ALLOW;
const KILL_PROCESS = 0x80000000;
const ERRNO = (e: number) => 0x00050000 | e;
const ld = (off: number): Insn => ({ code: 0x20, jt: 0, jf: 0, k: off });
const jeq = (k: number, jt: number, jf: number): Insn => ({ code: 0x15, jt, jf, k });
const jge = (k: number, jt: number, jf: number): Insn => ({ code: 0x35, jt, jf, k });
const jset = (k: number, jt: number, jf: number): Insn => ({ code: 0x45, jt, jf, k });
const ret = (k: number): Insn => ({ code: 0x06, jt: 0, jf: 0, k });
const NR = 0;
const ARCH = 4;
const ARG_LO = (i: number) => 16 + 8 * i;
const ARG_HI = (i: number) => 20 + 8 * i;

const hex = (prog: Insn[]) => Buffer.concat(prog.map((i) => {
  const b = Buffer.alloc(8);
  b.writeUInt16LE(i.code, 0);
  b[2] = i.jt;
  b[3] = i.jf;
  b.writeUInt32LE(i.k >>> 0, 4);
  return b;
})).toString('hex');
const one = (prog: Insn[], threads = [1]): ProcessFilters => parseFilters(`${threads.map((t) => `thread ${t} 0`).join('\n')}\nfilter 0 ${hex(prog)}\nok 0\n`);

/** Arch check, then ALLOW for the listed numbers, else `otherwise` (a runtime's default profile's shape). */
function allowList(nrs: number[], otherwise: number): Insn[] {
  const p: Insn[] = [ld(ARCH), jeq(AUDIT_ARCH_X86_64, 1, 0), ret(KILL_PROCESS), ld(NR)];
  nrs.forEach((nr, i) => p.push(jeq(nr, nrs.length - i, 0)));
  p.push(ret(otherwise), ret(ALLOW));
  return p;
}

test('an allow-list holding every call the injected code makes: ALLOW, inject', () => {
  const pf = one(allowList(INJECTED_SYSCALLS.map((u) => u.nr), ERRNO(1)));
  assert.equal(filterRefusal(pf), undefined);
});

test('an allow-list missing one call: refused, naming the call and the action', () => {
  const nrs = INJECTED_SYSCALLS.map((u) => u.nr).filter((nr) => nr !== 293);
  assert.equal(filterRefusal(one(allowList(nrs, ERRNO(38)))), 'the seccomp filter of thread 1 returns ERRNO 38 for pipe2');
  assert.equal(filterRefusal(one(allowList(nrs, KILL_PROCESS))), 'the seccomp filter of thread 1 returns KILL_PROCESS for pipe2');
});

test('a deny-list: KILL for memfd_create only (not ours) lets injection go; KILL for mprotect does not', () => {
  const deny = (nr: number) => [ld(NR), jeq(nr, 0, 1), ret(0), ret(ALLOW)];
  assert.equal(filterRefusal(one(deny(319))), undefined);
  assert.equal(filterRefusal(one(deny(10))), 'the seccomp filter of thread 1 returns KILL_THREAD for mprotect');
});

test('the arch check: a filter that allows only another architecture refuses', () => {
  const i386Only = [ld(ARCH), jeq(0x40000003, 0, 1), ret(ALLOW), ret(KILL_PROCESS)];
  assert.match(filterRefusal(one(i386Only)) ?? '', /KILL_PROCESS for read$/);
  // libseccomp's x32 guard: numbers with bit 30 set are refused; ours are not such numbers
  const x32Guard = [ld(ARCH), jeq(AUDIT_ARCH_X86_64, 1, 0), ret(KILL_PROCESS), ld(NR), jge(0x40000000, 0, 1), ret(ERRNO(1)), ret(ALLOW)];
  assert.equal(filterRefusal(one(x32Guard)), undefined);
});

test('argument checks: a fixed argument is followed exactly, an unpinned one both ways', () => {
  // fcntl allowed only with cmd F_DUPFD_CLOEXEC (the library's only fcntl): ALLOW
  const fcntlOnlyDup = [ld(NR), jeq(72, 0, 4), ld(ARG_LO(1)), jeq(0x406, 0, 1), ret(ALLOW), ret(ERRNO(1)), ret(ALLOW)];
  assert.deepEqual(evaluate(fcntlOnlyDup, { name: 'fcntl', nr: 72, args: [undefined, 0x406n, 1000n] }), { returns: [ALLOW] });
  assert.equal(filterRefusal(one(fcntlOnlyDup)), undefined);
  // mmap refused when PROT_EXEC is asked: the loader asks it, and prot is not pinned: refused
  const noExecMmap = [ld(NR), jeq(9, 0, 3), ld(ARG_LO(2)), jset(4, 0, 1), ret(ERRNO(1)), ret(ALLOW)];
  assert.equal(filterRefusal(one(noExecMmap)), 'the seccomp filter of thread 1 returns ERRNO 1 for mmap (for some of its arguments)');
  // a check on the high word of an argument: unknown, so both ways
  const hiWord = [ld(NR), jeq(257, 0, 4), ld(ARG_HI(2)), jeq(0, 0, 1), ret(ALLOW), ret(KILL_PROCESS), ret(ALLOW)];
  assert.match(filterRefusal(one(hiWord)) ?? '', /KILL_PROCESS for openat \(for some of its arguments\)$/);
  // the instruction pointer is never pinned
  const byIp = [ld(8), jge(0x7f0000000000 >>> 0, 0, 1), ret(ALLOW), ret(ERRNO(1))];
  assert.match(filterRefusal(one(byIp)) ?? '', /ERRNO 1 for read/);
});

test('KILL for every call, and a filter on one thread only: the thread is named', () => {
  const pf = parseFilters(`thread 10\nthread 11 0\nfilter 0 ${hex([ret(0)])}\nok 0\n`);
  assert.equal(filterRefusal(pf), 'the seccomp filter of thread 11 returns KILL_THREAD for read');
  assert.equal(filterRefusal(parseFilters(`thread 10 mode 0\nthread 11 mode 1\nok 0\n`)), 'thread 11 runs in strict seccomp mode, which kills it for any call but read, write, exit and sigreturn');
});

test('several filters: every one must allow (the most restrictive wins in the kernel)', () => {
  const allowAll = [ret(ALLOW)];
  const noFutex = [ld(NR), jeq(202, 0, 1), ret(ERRNO(1)), ret(ALLOW)];
  const pf = parseFilters(`thread 7 0 1\nfilter 0 ${hex(allowAll)}\nfilter 1 ${hex(noFutex)}\nok 0\n`);
  assert.equal(filterRefusal(pf), 'the seccomp filter of thread 7 returns ERRNO 1 for futex');
});

test('what cannot be told is a refusal: unknown instructions, A returned from an unknown, division by an unknown', () => {
  assert.match(filterRefusal(one([{ code: 0x28, jt: 0, jf: 0, k: 0 }, ret(ALLOW)])) ?? '', /cannot be read for read: .*load mode/);
  assert.match(filterRefusal(one([ld(16), { code: 0x16, jt: 0, jf: 0, k: 0 }])) ?? '', /unknown input/);
  assert.match(filterRefusal(one([ld(16), { code: 0x07, jt: 0, jf: 0, k: 0 }, ld(NR), { code: 0x3c, jt: 0, jf: 0, k: 0 }, ret(ALLOW)])) ?? '', /division by a value it cannot pin/);
  assert.match(filterRefusal(one([ld(NR), { code: 0x07, jt: 0, jf: 0, k: 0 }, ld(16), { code: 0x3c, jt: 0, jf: 0, k: 0 }, ret(ALLOW)])) ?? '', /read: .*division by zero/);
  // computed values: A = nr + 1, scratch memory, TXA
  const computed: Insn[] = [ld(NR), { code: 0x04, jt: 0, jf: 0, k: 1 }, { code: 0x02, jt: 0, jf: 0, k: 3 }, { code: 0x61, jt: 0, jf: 0, k: 3 }, { code: 0x87, jt: 0, jf: 0, k: 0 }, jeq(11, 0, 1), ret(ERRNO(5)), ret(ALLOW)];
  assert.equal(filterRefusal(one(computed)), 'the seccomp filter of thread 1 returns ERRNO 5 for mprotect');
  // a program that runs off its end
  assert.match(filterRefusal(one([ld(NR)])) ?? '', /past its end/);
});

test('a filter with more unpinned branches than are followed is refused, in bounded time', () => {
  const p: Insn[] = [];
  for (let i = 0; i < 40; i++) p.push(ld(ARG_LO(i % 6)), jset(1, 0, 0 + 0));
  // jt 0 / jf 0 go the same way: no fork; make them differ and join one further
  const branchy: Insn[] = [];
  for (let i = 0; i < 40; i++) branchy.push(ld(ARG_LO(i % 6)), jset(1 << (i % 31), 0, 1), ld(ARG_HI(i % 6)));
  branchy.push(ret(ALLOW));
  const t0 = Date.now();
  assert.match(filterRefusal(one(branchy)) ?? '', /more paths than are followed/);
  assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  assert.equal(filterRefusal(one([...p, ret(ALLOW)])), undefined);
});

test('the injector\'s list is read strictly', () => {
  assert.throws(() => parseFilters('thread 1 0\nok 0\n'), /filter 0, which is missing/);
  assert.throws(() => parseFilters('thread 1 mode 0\n'), /did not finish/);
  assert.throws(() => parseFilters('thread x\nok 0\n'), /unexpected line/);
  assert.throws(() => parseFilters('filter 0 abcd\nok 0\n'), /not whole instructions/);
});

test("podman 4.3's default profile as the kernel holds it (libseccomp's output, read by the injector from a container): ALLOW for all our calls; its argument checks followed", () => {
  const pf = parseFilters(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'seccomp', 'podman-4.3-default.txt'), 'utf8'));
  const prog = pf.filters.get(0)!;
  assert.equal(prog.length, 1158);
  assert.equal(filterRefusal(pf), undefined);
  // personality: allowed for a few personas only; any other falls to the default action (ERRNO ENOSYS)
  assert.deepEqual(evaluate(prog, { name: 'personality', nr: 135, args: [0n] }), { returns: [ALLOW] });
  assert.deepEqual(evaluate(prog, { name: 'personality', nr: 135, args: [0x1234n] }), { returns: [ERRNO(38)] });
  assert.deepEqual(new Set((evaluate(prog, { name: 'personality', nr: 135 }) as { returns: number[] }).returns), new Set([ALLOW, ERRNO(38)]));
  // a call the profile does not list: its default action (ERRNO ENOSYS or EPERM)
  const r = evaluate(prog, { name: 'kexec_load', nr: 246 }) as { returns: number[] };
  assert.equal(r.returns.length, 1);
  assert.equal(r.returns[0] >>> 16, 0x0005);
  // an architecture the profile does not name (aarch64; it names x86-64, i386 and x32) is refused
  assert.ok((evaluate(prog, { name: 'read', nr: 63 }, 0xc00000b7) as { returns: number[] }).returns.every((v) => v !== ALLOW));
});
