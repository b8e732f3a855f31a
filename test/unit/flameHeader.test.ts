// The flame graph's header: one short line on how stacks were unwound, counting code modules only
// (a JVM maps classes.jsa, locale files and the modules image too), and debug-info advice that
// names the package for the runtime at hand — never "rebuild with -g" for a system library.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCodeModule, unwindDetails, unwindSummary } from '../../extension/model/unwindText';
import { debugInfoRemedy, debugPackageFor, isSystemModule } from '../../extension/model/debugAdvice';
import type { UnwindModuleInfo } from '../../extension/protocol/profile';
import { installVscodeMock } from '../mocks/vscode';

installVscodeMock();

const { visibleWarnings } = require('../../extension/editor/features/profile/profile') as typeof import('../../extension/editor/features/profile/profile');

const jdk = '/usr/lib/jvm/java-17-openjdk-amd64';
const lib = '/usr/lib/x86_64-linux-gnu';
// What a Debian JDK 17 process maps (from /proc/PID/maps of the demo JVM), as libdw reports it.
const code = [`${jdk}/bin/java`, `${jdk}/lib/libjli.so`, `${jdk}/lib/server/libjvm.so`, `${jdk}/lib/libjava.so`, `${jdk}/lib/libzip.so`, `${jdk}/lib/libnio.so`, `${jdk}/lib/libnet.so`, `${jdk}/lib/libjimage.so`, `${lib}/libc.so.6`, `${lib}/libm.so.6`, `${lib}/libz.so.1.2.13`, `${lib}/libstdc++.so.6.0.30`, `${lib}/libgcc_s.so.1`, '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2', '[vdso: 4242]'];
const data = [`${jdk}/lib/server/classes.jsa`, `${jdk}/lib/modules`, '/usr/lib/locale/C.utf8/LC_ADDRESS', '/usr/lib/locale/C.utf8/LC_COLLATE', '/usr/lib/locale/locale-archive', `${lib}/gconv/gconv-modules.cache`, '/tmp/hsperfdata_root/1234'];

test('only code modules count: never classes.jsa, LC_ADDRESS, LC_COLLATE…', () => {
  for (const m of code) assert.equal(isCodeModule(m), true, m);
  for (const m of data) assert.equal(isCodeModule(m), false, m);
});

test('the header is one short line: "stacks: CFI for 14 modules, frame pointers for 1, JIT by perf map"', () => {
  const modules: UnwindModuleInfo[] = [
    ...code.map((module) => ({ module, cfi: module.endsWith('/bin/java') ? ('none' as const) : ('eh_frame' as const) })),
    ...data.map((module) => ({ module, cfi: 'none' as const })),
  ];
  const u = { mode: 'dwarf' as const, modules };
  assert.equal(unwindSummary(u), 'stacks: CFI for 14 modules, frame pointers for 1, JIT by perf map');
  const details = unwindDetails(u)!;
  assert.match(details, /CFI \(14\): java|CFI \(14\): .*libjvm\.so/);
  assert.match(details, /Frame pointers only \(1\): java$/m);
  assert.doesNotMatch(details, /classes\.jsa|LC_|locale-archive|gconv/);
  assert.equal(unwindSummary({ ...u, perfMap: true }), 'stacks: CFI for 14 modules, frame pointers for 1, JIT by perf map');
});

test('a C program\'s header says nothing about JIT or perf maps; a JVM in perf-map mode does', () => {
  const c = { mode: 'dwarf' as const, modules: [{ module: '/home/alice/app', cfi: 'eh_frame' as const }, { module: `${lib}/libc.so.6`, cfi: 'eh_frame' as const }] };
  assert.equal(unwindSummary(c), 'stacks: CFI for 2 modules');
  assert.doesNotMatch(unwindDetails(c)!, /JIT|perf map/);
  assert.equal(unwindSummary({ mode: 'fp' }), 'stacks: frame pointers (--unwind fp)');
  assert.equal(unwindSummary({ mode: 'fp', perfMap: true }), 'stacks: frame pointers (--unwind fp), JIT named by perf map');
  assert.equal(unwindSummary({ mode: 'dwarf', perfMap: true }), 'stacks: CFI where modules have it, frame pointers elsewhere, JIT by perf map');
  assert.match(unwindDetails({ mode: 'dwarf', perfMap: true })!, /perf-PID\.map/);
  // a document that says no perf map was used wins over libjvm.so among the modules
  assert.equal(unwindSummary({ mode: 'dwarf', perfMap: false, modules: [{ module: `${jdk}/lib/server/libjvm.so`, cfi: 'eh_frame' }] }), 'stacks: CFI for 1 module');
});

test('debug-info advice names the package for the runtime at hand', () => {
  assert.equal(debugPackageFor('openjdk-17-jre-headless'), 'openjdk-17-dbg');
  assert.equal(debugPackageFor('openjdk-21-jdk'), 'openjdk-21-dbg');
  assert.equal(debugPackageFor('libc6'), 'libc6-dbg');
  assert.equal(debugPackageFor('libssl3'), 'libssl3-dbgsym');
  const jvm = debugInfoRemedy({ path: `${jdk}/lib/server/libjvm.so`, ownerPackage: 'openjdk-17-jre-headless', own: false });
  assert.equal(jvm, 'for file:line install its debug symbols: apt install openjdk-17-dbg');
  assert.match(debugInfoRemedy({ path: `${lib}/libc.so.6`, ownerPackage: 'libc6', own: false }), /apt install libc6-dbg$/);
  assert.match(debugInfoRemedy({ path: `${lib}/libssl.so.3`, ownerPackage: 'libssl3', own: false }), /apt install libssl3-dbgsym, from the debian-debug archive/);
  // a JDK unpacked under /usr/lib/jvm without a package (Temurin): no -g advice either
  const temurin = debugInfoRemedy({ path: '/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so', own: false });
  assert.match(temurin, /not from a distribution package/);
  assert.doesNotMatch(temurin, /-g/);
  assert.equal(isSystemModule({ path: '/opt/vendor/lib/libfoo.so', own: false }), true);
  assert.doesNotMatch(debugInfoRemedy({ path: '/opt/vendor/lib/libfoo.so', own: false }), /-g/);
  // the user's own program: rebuild it
  assert.equal(debugInfoRemedy({ path: '/home/alice/project/app', own: true }), 'rebuild it with -g for file:line');
});

test('each warning once; a dismissed one is not shown again', () => {
  const state = { get: () => ['no debug info in libjvm.so …'] };
  assert.deepEqual(visibleWarnings(state as never, ['a', 'no debug info in libjvm.so …', 'a', 'b']), ['a', 'b']);
});
