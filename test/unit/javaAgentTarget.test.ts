// The Java agent needs AsyncGetCallTrace from the target's libjvm.so: the helper checks the
// library's exported dynamic symbols before it loads anything (exit 4 when it is missing), and the
// agent's own code 100 stays the second line of defence. Checked on the real libjvm.so of each
// installed JDK, on libc, and on tiny libraries built here that define the symbol exported, hidden,
// or only reference it. Also: a JVM whose /tmp is mounted noexec cannot map the agent from there
// (found from /proc/PID/mountinfo). No root needed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withElf } from '../../extension/sys/elf/elf';
import { StudioError } from '../../extension/protocol/errors';
import { checkAgctLibrary, tmpIsNoexec } from '../../extension/tracers/javaAgent/agent';

const JDKS = ['/usr/lib/jvm/java-17-openjdk-amd64', '/usr/lib/jvm/temurin-25-jdk-amd64'];
const LIBC = ['/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib/x86_64-linux-gnu/libc.so.6'].find((p) => fs.existsSync(p));
const CC = spawnSync('cc', ['--version']).status === 0;
let dir = '';

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agct-check-'));
});
after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const refusal = (e: unknown) => e instanceof StudioError && e.kind === 'unsuitable' && /does not export AsyncGetCallTrace/.test(e.message) && /--java perfmap/.test(e.message) && !e.message.includes('\n');

for (const home of JDKS) {
  const lib = `${home}/lib/server/libjvm.so`;
  test(`${path.basename(home)}: its libjvm.so exports AsyncGetCallTrace, so the check passes`, { skip: fs.existsSync(lib) ? undefined : `no JDK at ${home}` }, () => {
    assert.equal(withElf(lib, (e) => e.exportsDynamic('AsyncGetCallTrace')), true);
    assert.equal(checkAgctLibrary(lib), true);
  });
}

test('libc has no AsyncGetCallTrace: refused with the cause and the fix on one line', { skip: LIBC ? undefined : 'libc.so.6 not found' }, () => {
  assert.equal(withElf(LIBC!, (e) => e.exportsDynamic('AsyncGetCallTrace')), false);
  assert.equal(withElf(LIBC!, (e) => e.exportsDynamic('malloc')), true, 'an exported function is found');
  assert.throws(() => checkAgctLibrary(LIBC!, 'pid 42\'s JVM library /opt/x/libjvm.so'), (e: unknown) => refusal(e) && /pid 42's JVM library \/opt\/x\/libjvm\.so/.test((e as Error).message));
});

test('tiny libraries: only a defined, exported AsyncGetCallTrace passes', { skip: CC ? undefined : 'no C compiler (cc)' }, () => {
  const build = (name: string, src: string) => {
    const c = path.join(dir, `${name}.c`);
    const so = path.join(dir, `${name}.so`);
    fs.writeFileSync(c, src);
    const r = spawnSync('cc', ['-shared', '-fPIC', '-o', so, c], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return so;
  };
  const exported = build('exported', 'void AsyncGetCallTrace(void *t, int d, void *u) { (void)t; (void)d; (void)u; }\n');
  const hidden = build('hidden', '__attribute__((visibility("hidden"))) void AsyncGetCallTrace(void *t, int d, void *u) { (void)t; (void)d; (void)u; }\nvoid other(void) { AsyncGetCallTrace(0, 0, 0); }\n');
  const referenced = build('referenced', 'extern void AsyncGetCallTrace(void *, int, void *);\nvoid call(void) { AsyncGetCallTrace(0, 0, 0); }\n');
  const weak = build('weak', '__attribute__((weak)) void AsyncGetCallTrace(void *t, int d, void *u) { (void)t; (void)d; (void)u; }\n');
  assert.equal(checkAgctLibrary(exported), true);
  assert.equal(checkAgctLibrary(weak), true, 'a weak definition is exported too');
  assert.throws(() => checkAgctLibrary(hidden), refusal, 'hidden: dlsym cannot find it');
  assert.throws(() => checkAgctLibrary(referenced), refusal, 'an undefined reference is not a definition');
});

test('a file that cannot be read as ELF gives no verdict (the agent\'s code 100 decides)', () => {
  const f = path.join(dir, 'not-elf.so');
  fs.writeFileSync(f, 'not an ELF file');
  assert.equal(checkAgctLibrary(f), false);
  assert.equal(checkAgctLibrary(path.join(dir, 'missing.so')), false);
});

test('tmpIsNoexec: the mount in effect at /tmp decides (the last one on the longest prefix)', () => {
  const root = '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw';
  const tmpNoexec = '40 22 0:35 / /tmp rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw';
  const tmpExec = '41 40 0:36 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw';
  const other = '42 22 0:37 / /tmpfoo rw,noexec - tmpfs tmpfs rw';
  assert.equal(tmpIsNoexec(0, [root].join('\n')), false);
  assert.equal(tmpIsNoexec(0, [root, tmpNoexec].join('\n')), true);
  assert.equal(tmpIsNoexec(0, [root, tmpNoexec, tmpExec].join('\n')), false, 'a later mount over /tmp hides the noexec one');
  assert.equal(tmpIsNoexec(0, [root, other].join('\n')), false, '/tmpfoo is not /tmp');
  assert.equal(tmpIsNoexec(0, ['22 1 8:1 / / rw,noexec - ext4 /dev/sda1 rw'].join('\n')), true, 'no /tmp mount: the root\'s flags');
});
