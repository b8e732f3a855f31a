import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkPid, isKernelThread, javaMain, listProcesses, parseStat, readStat } from '../../extension/sys/proc/processes';
import { StudioError } from '../../extension/protocol/errors';

test('parseStat handles comm with spaces and parentheses', () => {
  const s = parseStat('1234 (my (weird) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5555 1000 10');
  assert.equal(s.pid, 1234);
  assert.equal(s.comm, 'my (weird) prog');
  assert.equal(s.state, 'S');
  assert.equal(s.ppid, 1);
  assert.equal(s.flags, 4194560);
  assert.equal(s.startTime, 5555);
});

test('kernel threads are recognized', () => {
  const kthreadd = readStat(2);
  if (kthreadd) assert.equal(isKernelThread(kthreadd), true);
  assert.equal(isKernelThread(readStat(process.pid)!), false);
});

test('javaMain finds the main class, jar or module', () => {
  assert.equal(javaMain(['java', '-Xmx1g', '-cp', 'a.jar:b', 'com.example.Main', 'arg']), 'com.example.Main');
  assert.equal(javaMain(['java', '-jar', 'app.jar']), 'app.jar');
  assert.equal(javaMain(['java', '-m', 'mod/com.x.Main']), 'mod/com.x.Main');
  assert.equal(javaMain(['java', '--module=mod/x.Y']), 'mod/x.Y');
});

test('checkPid explains bad pids', () => {
  const kind = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e instanceof StudioError ? [e.kind, e.message] : ['other', String(e)];
    }
    return ['ok', ''];
  };
  assert.equal(kind(() => checkPid(0))[0], 'input');
  assert.equal(kind(() => checkPid(-5))[0], 'input');
  assert.equal(kind(() => checkPid(99999999))[0], 'input');
  const [k, m] = kind(() => checkPid(4194000));
  assert.equal(k, 'input');
  assert.match(m, /no process with pid 4194000/);
  if (readStat(2)) assert.equal(kind(() => checkPid(2))[0], 'unsuitable');
  assert.equal(kind(() => checkPid(process.pid))[0], 'ok');
});

test('listProcesses includes this process with its command line', () => {
  const me = listProcesses().find((p) => p.pid === process.pid);
  assert.ok(me);
  assert.ok(me.cmdline.length > 0);
  assert.equal(me.kernelThread, false);
});
