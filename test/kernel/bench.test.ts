// The benchmark suite's quick run, as CI runs it: `scripts/bench.mjs --quick --json` must produce
// every row the benchmark issue names, in the documented shape, each with its peer from the same
// run where one exists. Figures are not judged here (they belong to the suite and RESULTS.md);
// the quick run's table is kept under test-artifacts/ for a look.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Row } from '../../bench/lib';
import { kernelSkipReason, repoRoot } from '../helpers';

const has = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

/** row-name fragments the issue requires, and the peer each must carry (when that tool is installed) */
const REQUIRED: { name: string; peer?: string; peerTool?: string }[] = [
  { name: 'java-gc overhead', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'memleak overhead (ours / untraced', peer: 'heaptrack', peerTool: 'heaptrack' },
  { name: 'memleak overhead (ours / floor', peer: 'floor' },
  { name: 'profile overhead' },
  { name: 'profile overhead, CFI unwinding' },
  { name: 'offcpu overhead', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'memleak CFI leak stacks', peer: 'frame pointers' },
  { name: 'profile unwind cost per sample', peer: 'perf script', peerTool: 'perf' },
  { name: 'stack agreement with perf', peer: 'perf', peerTool: 'perf' },
  { name: 'attach latency java-gc', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'attach latency runqlat', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'attach latency biolatency', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'attach latency cpudist', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'attach latency tcplat', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'biolatency overhead per I/O', peer: 'libbpf-tools biolatency', peerTool: 'biolatency' },
  { name: 'cpudist overhead per context switch', peer: 'libbpf-tools cpudist', peerTool: 'cpudist' },
  // libbpf-tools tcpconnlat where it attaches (kprobes), bpftrace on the same tracepoints where not
  { name: 'tcplat overhead per connect', peer: 'tcpconnlat' },
  { name: 'attach latency memleak', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'attach latency profile', peer: 'bpftrace', peerTool: 'bpftrace' },
  { name: 'symbolize warm', peer: 'llvm-symbolizer' },
  { name: 'flamegraph layout' },
  { name: 'flamegraph first paint' },
  { name: 'flamegraph zoom' },
  { name: 'event throughput' },
  { name: 'memleak preload mode', peer: 'heaptrack', peerTool: 'heaptrack' },
  { name: 'memleak inject mode', peer: 'heaptrack -p', peerTool: 'gdb' },
  { name: 'memleak sampled attach', peer: 'exact' },
  { name: 'memleak sampled estimate', peer: '512 KiB' },
  { name: 'java walk completeness on javac (share of samples in Java code' },
  { name: 'java stacks per sampling tick on javac', peer: 'JFR' },
  { name: 'agent CPU over', peer: 'bpftrace', peerTool: 'bpftrace' },
];

/**
 * The groups that make those rows. The others (cfi, latency, jfr, live views, helper memory, Java heap
 * and agent overhead) run in `npm run bench`; their tracers' results are checked by their own kernel
 * tests, and leaving them out keeps CI within its time budget.
 */
const REQUIRED_GROUPS = ['java-gc', 'memleak', 'memleak-unwind', 'profile', 'offcpu', 'profile-unwind', 'attach', 'biolatency', 'cpudist', 'tcplat', 'symbolize', 'flamegraph', 'events', 'memleak-sampling', 'java-walk', 'agent'];

test('bench --quick --json: every row of the benchmark issue, with its peer from the same run', { skip: kernelSkipReason(), timeout: 900_000 }, (t) => {
  const artifacts = path.join(repoRoot, 'test-artifacts');
  fs.mkdirSync(artifacts, { recursive: true });
  const md = path.join(artifacts, 'bench-quick.md');
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'bench.mjs'), '--quick', '--json', '--only', REQUIRED_GROUPS.join(','), '--out', md], { cwd: repoRoot, encoding: 'utf8', timeout: 840_000 });
  const seconds = (Date.now() - t0) / 1000;
  assert.equal(r.status, 0, `bench exited with ${r.status}${r.signal ? ` (${r.signal})` : ''}:\n${r.stderr.slice(-3000)}`);
  const rows = JSON.parse(r.stdout) as Row[];
  assert.ok(Array.isArray(rows) && rows.length > 0, 'no rows');
  for (const row of rows) {
    assert.equal(typeof row.name, 'string');
    assert.ok(Number.isFinite(row.value), `${row.name}: value ${row.value}`);
    assert.ok(row.unit.length > 0, `${row.name}: no unit`);
    assert.ok(row.better === 'lower' || row.better === 'higher', `${row.name}: better = ${row.better}`);
    assert.ok(row.target === null || Number.isFinite(row.target), `${row.name}: target ${row.target}`);
    if (row.peer !== null) assert.ok(row.peer.name.length > 0 && Number.isFinite(row.peer.value), `${row.name}: peer ${JSON.stringify(row.peer)}`);
  }
  for (const want of REQUIRED) {
    const row = rows.find((x) => x.name.includes(want.name));
    assert.ok(row, `no row named like "${want.name}"; rows: ${rows.map((x) => x.name).join(' | ')}`);
    if (want.peer && (!want.peerTool || has(want.peerTool))) assert.ok(row.peer?.name.includes(want.peer), `${row.name}: peer ${JSON.stringify(row.peer)}, expected ${want.peer}`);
  }
  t.diagnostic(`${rows.length} rows in ${seconds.toFixed(0)} s; table in test-artifacts/bench-quick.md`);
  // each group's wall time, so CI's log shows where the quick run's minutes go
  for (const line of r.stderr.split('\n')) if (/^bench: \S+ took /.test(line)) t.diagnostic(line);
});
