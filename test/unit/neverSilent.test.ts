// The decisions that keep a tracer from reporting a quiet nothing: a CPU profile's samples against
// the target's own CPU time, and memleak's allocations against the process's activity.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkProfileCpu } from '../../extension/model/profileCpuCheck';
import { memleakSilence } from '../../extension/model/memleakSilence';

test('profile: samples that match the CPU time agree', () => {
  const c = checkProfileCpu({ pid: 7, frequency: 499, samples: 2450, cpuMs: 4990 });
  assert.equal(c.verdict, 'agree');
  assert.equal(c.expected, 2490);
  assert.match(c.message, /pid 7: sampled 2450 — its own CPU time \(4\.99 s over the session\) implies about 2490 at 499 Hz$/);
});

test('profile: far fewer samples than the CPU time implies is "missed", naming the causes', () => {
  const c = checkProfileCpu({ pid: 7, frequency: 99, samples: 40, cpuMs: 10_000 });
  assert.equal(c.verdict, 'missed');
  assert.match(c.message, /saw 4 % of it/);
  assert.match(c.message, /throttled .*another BPF program.*pid filter/);
  // none at all while it ran: missed too
  assert.equal(checkProfileCpu({ pid: 7, frequency: 99, samples: 0, cpuMs: 3000 }).verdict, 'missed');
});

test('profile: a moderate shortfall warns; the boundaries', () => {
  const c = checkProfileCpu({ pid: 7, frequency: 100, samples: 350, cpuMs: 5000 });
  assert.equal(c.verdict, 'fewer');
  assert.match(c.message, /150 samples fewer than expected/);
  // the boundaries: 50 % and 80 % of the expected count
  assert.equal(checkProfileCpu({ pid: 7, frequency: 100, samples: 250, cpuMs: 5000 }).verdict, 'fewer');
  assert.equal(checkProfileCpu({ pid: 7, frequency: 100, samples: 249, cpuMs: 5000 }).verdict, 'missed');
  assert.equal(checkProfileCpu({ pid: 7, frequency: 100, samples: 400, cpuMs: 5000 }).verdict, 'agree');
});

test('profile: an idle target or unreadable CPU time is not judged', () => {
  assert.equal(checkProfileCpu({ pid: 7, frequency: 99, samples: 0, cpuMs: 100 }).verdict, 'idle');
  assert.equal(checkProfileCpu({ pid: 7, frequency: 99, samples: 0, cpuMs: 0 }).verdict, 'idle');
  const u = checkProfileCpu({ pid: 7, frequency: 99, samples: 5 });
  assert.equal(u.verdict, 'unread');
  assert.match(u.message, /not checked/);
});

test('memleak: no allocation while the process touched new memory is said, with the figures', () => {
  const probed = '/usr/lib/x86_64-linux-gnu/libc.so.6';
  const both = memleakSilence({ pid: 9, allocations: 0, cpuMs: 120, minorFaults: 300, probed });
  assert.match(both!, /no allocation was seen in pid 9 while it ran \(120 ms of CPU, 300 minor page faults: it touched new memory during the session\): the probes are on \/usr\/lib/);
  assert.match(both!, /--allocator-lib PATH/);
  assert.match(memleakSilence({ pid: 9, allocations: 0, cpuMs: 0, minorFaults: 64, probed })!, /\(64 minor page faults/);
});

test('memleak: a program that computes without allocating is believed (CPU alone, a few faults)', () => {
  const probed = 'libc.so.6';
  assert.equal(memleakSilence({ pid: 9, allocations: 0, cpuMs: 1710, minorFaults: 47, probed }), undefined);
  assert.equal(memleakSilence({ pid: 9, allocations: 0, cpuMs: 30, minorFaults: 0, probed }), undefined);
});

test('memleak: allocations seen, or a process that did nothing, is no problem', () => {
  const probed = 'libc.so.6';
  assert.equal(memleakSilence({ pid: 9, allocations: 1, cpuMs: 5000, minorFaults: 9000, probed }), undefined);
  assert.equal(memleakSilence({ pid: 9, allocations: 0, cpuMs: 0, minorFaults: 0, probed }), undefined);
  assert.equal(memleakSilence({ pid: 9, allocations: 0, probed }), undefined);
});
