// The CLI's contract: usage errors exit 2 with the reason on stderr, never a stack trace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { cliJs, runCli } from '../helpers';
import { durationFlag, numberFlag, parse, pidFlag } from '../../extension/cli/args';
import { StudioError } from '../../extension/protocol/errors';

const built = fs.existsSync(cliJs);

function usage(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof StudioError, String(e));
    assert.equal(e.kind, 'usage');
    return e.message;
  }
  assert.fail('expected a usage error');
}

test('flag parsers check ranges and say what they expected', () => {
  assert.equal(pidFlag('123'), 123);
  assert.equal(pidFlag(undefined), undefined);
  assert.match(usage(() => pidFlag('abc')), /--pid takes a process id/);
  assert.match(usage(() => pidFlag('0')), /out of range/);
  assert.match(usage(() => pidFlag('-4')), /out of range/);
  assert.match(usage(() => pidFlag('99999999')), /out of range/);
  assert.equal(durationFlag('1.5'), 1.5);
  assert.match(usage(() => durationFlag('-1')), /--duration -1 is out of range/);
  assert.match(usage(() => durationFlag('0')), /greater than 0/);
  assert.match(usage(() => durationFlag('soon')), /takes a number/);
  assert.match(usage(() => numberFlag('0', '--frequency', 1, 10000, { integer: true })), /--frequency 0 is out of range/);
  assert.match(usage(() => numberFlag('2.5', '--top', 1, 10, { integer: true })), /whole number/);
  assert.match(usage(() => parse(['--bogus'], { json: { type: 'boolean' } })), /Unknown option '--bogus'/);
});

test('ebpf-studio without a command prints help and exits 2', (t) => {
  if (!built) return t.skip('dist/cli.js not built: run npm run build');
  const r = runCli([]);
  assert.equal(r.code, 2);
  assert.match(r.stdout, /usage: ebpf-studio <command>/);
});

test('an unknown command exits 2 and lists the commands', (t) => {
  if (!built) return t.skip('dist/cli.js not built: run npm run build');
  const r = runCli(['frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command "frobnicate"/);
  assert.match(r.stderr, /doctor/);
});

test('unknown flags and bad values exit 2 with the reason and no stack trace', (t) => {
  if (!built) return t.skip('dist/cli.js not built: run npm run build');
  for (const [args, re] of [
    [['doctor', '--bogus'], /Unknown option '--bogus'/],
    [['doctor', '--pid', 'abc'], /--pid takes a process id/],
    [['doctor', '--pid', '0'], /out of range/],
    [['selftest', '--duration', '-1'], /--duration -1 is out of range/],
    [['selftest', '--attach', 'kprobe'], /--attach must be/],
  ] as [string[], RegExp][]) {
    const r = runCli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.ok(r.ms < 5000, `answered in ${r.ms} ms`);
  }
});

test('doctor --pid of a missing process exits 2', (t) => {
  if (!built) return t.skip('dist/cli.js not built: run npm run build');
  const r = runCli(['doctor', '--pid', '4194000']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /no process with pid 4194000/);
});
