// The benchmark suite (`npm run bench -- [--quick] [--json] [--only a,b] [--out FILE]`): runs each
// row group, prints a table (or, with --json, only the JSON array of rows on stdout), and writes
// bench/RESULTS.md on a full run (a --quick run writes only where --out says). Progress goes to
// stderr. Groups whose tracer is not built are left out with the reason. npm prints its own
// "> ebpf-studio@0.1.0 bench" banner on stdout: for a clean JSON stream use
// `npm run -s bench -- --json` or `node scripts/bench.mjs --json`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildWorkloads, cli, have, JAVA_HOME, root, type BenchContext, type Row } from './lib';
import { machine } from './machine';
import { benchJavaGc } from './javaGcOverhead';
import { benchMemleak } from './memleakOverhead';
import { benchMemleakUnwind } from './memleakUnwind';
import { benchProfile } from './profileOverhead';
import { benchProfileUnwind } from './profileUnwind';
import { benchAttach } from './attachLatency';
import { benchBiolatency } from './biolatencyOverhead';
import { benchCpudist } from './cpudistOverhead';
import { benchTcplat } from './tcplatOverhead';
import { benchLatency } from './latencyOverhead';
import { benchSymbolizeRows } from './symbolizeRows';
import { benchFlamegraphRows } from './flamegraphRows';
import { benchLiveViewRows } from './liveViews';
import { benchEvents } from './eventThroughput';
import { benchHelperMemory } from './helperMemory';
import { benchMemleakSampling } from './memleakSampling';
import { benchJavaAgent } from './javaAgentOverhead';
import { benchJavaHeap } from './javaHeapOverhead';
import { benchAgent } from './agentOverhead';
import { benchOffcpu } from './offcpuOverhead';
import { benchCfi } from './cfiWalk';
import { benchCfiHost } from './cfiHost';
import { benchJavaWalk } from './javaWalk';
import { benchJfr } from './jfrParse';
import { benchJfrMethodTrace, JDK25 } from './jfrMethodTrace';
import { benchLatencyJava } from './latencyJavaOverhead';

interface Group {
  id: string;
  run(ctx: BenchContext): Promise<Row[]>;
  /** why the group cannot run here, or undefined */
  missing?(): string | undefined;
}

const needsRoot = () => (process.geteuid?.() === 0 ? undefined : 'needs root (BPF, uprobes)');
const needsObject = (name: string) => () => needsRoot() ?? (fs.existsSync(path.join(root, 'dist', 'bpf', `${name}.bpf.o`)) ? undefined : `dist/bpf/${name}.bpf.o is not built (npm run build)`);
const needsTracer = (name: string) => needsObject(name);

const GROUPS: Group[] = [
  { id: 'java-gc', run: benchJavaGc, missing: needsTracer('java-gc') },
  { id: 'memleak', run: benchMemleak, missing: needsTracer('memleak') },
  { id: 'memleak-unwind', run: benchMemleakUnwind, missing: needsTracer('memleak') },
  { id: 'profile', run: benchProfile, missing: needsTracer('profile') },
  { id: 'offcpu', run: benchOffcpu, missing: needsTracer('offcpu') },
  { id: 'profile-unwind', run: benchProfileUnwind, missing: needsTracer('profile') },
  { id: 'cfi', run: benchCfi, missing: needsTracer('profile') },
  { id: 'cfi-host', run: benchCfiHost, missing: () => needsTracer('profile')() ?? (have('perf') ? undefined : 'no perf (apt-get install linux-perf)') },
  { id: 'attach', run: benchAttach, missing: needsRoot },
  { id: 'biolatency', run: benchBiolatency, missing: () => needsTracer('biolatency')() ?? (fs.existsSync('/usr/sbin/biolatency') ? undefined : 'no /usr/sbin/biolatency (apt-get install libbpf-tools)') },
  { id: 'cpudist', run: benchCpudist, missing: () => needsTracer('cpudist')() ?? (fs.existsSync('/usr/sbin/cpudist') ? undefined : 'no /usr/sbin/cpudist (apt-get install libbpf-tools)') },
  { id: 'tcplat', run: benchTcplat, missing: () => needsTracer('tcplat')() ?? (have('bpftrace') || fs.existsSync('/usr/sbin/tcpconnlat') ? undefined : 'neither bpftrace nor /usr/sbin/tcpconnlat (apt-get install bpftrace libbpf-tools)') },
  { id: 'symbolize', run: benchSymbolizeRows },
  { id: 'flamegraph', run: benchFlamegraphRows },
  { id: 'live-views', run: benchLiveViewRows },
  { id: 'events', run: benchEvents, missing: needsObject('bench_events') },
  { id: 'helper-memory', run: benchHelperMemory, missing: needsTracer('memleak') },
  { id: 'memleak-sampling', run: benchMemleakSampling, missing: needsTracer('memleak') },
  { id: 'java-heap', run: benchJavaHeap, missing: () => needsRoot() ?? (fs.existsSync(path.join(root, 'dist', 'libebpf-studio-jvmagent.so')) ? undefined : 'dist/libebpf-studio-jvmagent.so is not built (npm run build with a JDK)') },
  { id: 'agent', run: benchAgent, missing: () => needsObject('java-gc')() ?? needsObject('runqlat')() ?? (fs.existsSync('/usr/lib/jvm/java-17-openjdk-amd64/bin/java') ? undefined : 'no JDK 17 (apt-get install openjdk-17-jdk-headless)') },
  { id: 'java-agent', run: benchJavaAgent, missing: () => needsTracer('profile')() ?? (fs.existsSync(path.join(root, 'dist', 'libebpf-studio-jvmagent.so')) ? undefined : 'dist/libebpf-studio-jvmagent.so is not built (npm run build with a JDK)') },
  { id: 'java-walk', run: (ctx) => benchJavaWalk(ctx, cli), missing: () => needsTracer('profile')() ?? (fs.existsSync(path.join(root, 'dist', 'libebpf-studio-jvmagent.so')) ? undefined : 'dist/libebpf-studio-jvmagent.so is not built (npm run build with a JDK)') },
  { id: 'latency', run: benchLatency, missing: needsTracer('latency') },
  { id: 'jfr', run: benchJfr, missing: () => (fs.existsSync(path.join(JAVA_HOME, 'bin', 'javac')) ? undefined : 'no JDK 17 (apt-get install openjdk-17-jdk-headless)') },
  { id: 'jfr-method-trace', run: benchJfrMethodTrace, missing: () => (fs.existsSync(path.join(JDK25, 'bin', 'java')) ? undefined : `no Temurin 25 at ${JDK25}`) },
  { id: 'latency-java', run: benchLatencyJava, missing: () => (fs.existsSync(path.join(root, 'dist', 'ebpf-studio-javalatency.jar')) ? (fs.existsSync(path.join(JAVA_HOME, 'bin', 'javac')) ? undefined : `no JDK 17 at ${JAVA_HOME}`) : 'dist/ebpf-studio-javalatency.jar is not built (no JDK 17-23 javac at build)') },
];

function usage(): never {
  process.stderr.write(`usage: npm run -s bench -- [--quick] [--json] [--only ${GROUPS.map((g) => g.id).join(',')}] [--out FILE]\n`);
  process.exit(2);
}

export function meets(r: Row): boolean | undefined {
  if (r.target === null || !Number.isFinite(r.value)) return undefined;
  return r.better === 'lower' ? r.value <= r.target : r.value >= r.target;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 10_000) return Math.round(n).toLocaleString('en-US');
  return String(n);
}

function targetText(r: Row): string {
  return r.target === null ? '—' : `${r.better === 'lower' ? '≤' : '≥'} ${fmt(r.target)} ${r.unit}`;
}

function verdict(r: Row): string {
  const m = meets(r);
  return m === undefined ? '' : m ? 'met' : 'MISSED';
}

function table(rows: Row[]): string {
  const cells = rows.map((r) => [r.name, `${fmt(r.value)} ${r.unit}`, targetText(r), verdict(r), r.peer ? `${r.peer.name}: ${fmt(r.peer.value)} ${r.unit}` : '—']);
  const head = ['row', 'value', 'target', '', 'peer (same run)'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i])).join('  ').trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

function markdown(rows: Row[], notes: string[], quick: boolean, seconds: number): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const out = [
    `# Benchmark results${quick ? ' (quick run)' : ''}`,
    '',
    `Written by \`npm run bench${quick ? ' -- --quick' : ''}\` (bench/main.ts) in ${Math.round(seconds)} s. Each figure is a median over`,
    'several runs; each comparison with a peer was measured in the same run, variants interleaved',
    '(A B A B ...). Ratios are medians of the per-round ratios. `--json` prints the same rows.',
    '',
    '## Machine',
    '',
    '| | |',
    '| --- | --- |',
    ...machine().map(([k, v]) => `| ${k} | ${esc(v)} |`),
    '',
    '## Results',
    '',
    '| row | value | target | | peer (same run) |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${esc(r.name)} | ${fmt(r.value)} ${r.unit} | ${targetText(r)} | ${verdict(r) === 'MISSED' ? '**missed**' : verdict(r)} | ${r.peer ? `${esc(r.peer.name)}: ${fmt(r.peer.value)} ${r.unit}` : '—'} |`),
    '',
    '## Details',
    '',
    ...rows.filter((r) => r.detail).map((r) => `- **${esc(r.name)}**: ${r.detail}`),
  ];
  if (notes.length) out.push('', '## Notes', '', ...notes.map((n) => `- ${n}`));
  return `${out.join('\n')}\n`;
}

async function main(): Promise<number> {
  let values: { quick?: boolean; json?: boolean; only?: string; out?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ options: { quick: { type: 'boolean' }, json: { type: 'boolean' }, only: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (e) {
    process.stderr.write(`bench: ${(e as Error).message}\n`);
    usage();
  }
  if (values.help) usage();
  const only = values.only?.split(',').map((s) => s.trim());
  const unknown = only?.filter((o) => !GROUPS.some((g) => g.id === o));
  if (unknown?.length) {
    process.stderr.write(`bench: unknown group ${unknown.join(', ')}\n`);
    usage();
  }
  if (!fs.existsSync(cli)) {
    process.stderr.write('bench: dist/cli.js is missing: run "npm run build" first\n');
    return 2;
  }
  const quick = Boolean(values.quick);
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const ctx: BenchContext = { quick, buildDir: buildWorkloads(), log };
  const rows: Row[] = [];
  const notes: string[] = [];
  let failed = false;
  const t0 = performance.now();
  const loadAtStart = os.loadavg()[0].toFixed(2);
  for (const g of GROUPS) {
    if (only && !only.includes(g.id)) continue;
    const why = g.missing?.();
    if (why) {
      log(`bench: ${g.id}: left out: ${why}`);
      notes.push(`${g.id} rows left out: ${why}.`);
      continue;
    }
    const tg = performance.now();
    log(`bench: ${g.id}...`);
    try {
      const got = await g.run(ctx);
      rows.push(...got);
      for (const r of got) log(`  ${r.name}: ${fmt(r.value)} ${r.unit}${r.peer ? ` (${r.peer.name}: ${fmt(r.peer.value)})` : ''}`);
    } catch (e) {
      failed = true;
      log(`bench: ${g.id} failed: ${(e as Error).stack ?? e}`);
      notes.push(`${g.id} failed: ${(e as Error).message.split('\n')[0]}`);
    }
    log(`bench: ${g.id} took ${((performance.now() - tg) / 1000).toFixed(1)} s`);
  }
  const seconds = (performance.now() - t0) / 1000;
  notes.push(`Load average (1 min) ${loadAtStart} at the start and ${os.loadavg()[0].toFixed(2)} at the end of the run, on ${os.cpus().length} CPUs: other work on the machine shows up as noise in every row.`);
  for (const r of rows) if (meets(r) === false) notes.push(`${r.name} missed its target (${targetText(r)})${r.limit ? `: ${r.limit}` : '.'}`);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(rows.map(({ detail: _d, limit: _l, ...r }) => r), null, 2)}\n`);
  } else {
    process.stdout.write(`${table(rows)}\n`);
    for (const n of notes) process.stdout.write(`note: ${n}\n`);
  }
  const out = values.out ?? (quick || only ? undefined : path.join(root, 'bench', 'RESULTS.md'));
  if (out) {
    fs.writeFileSync(out, markdown(rows, notes, quick, seconds));
    log(`bench: wrote ${path.relative(process.cwd(), out)}`);
  }
  log(`bench: done in ${seconds.toFixed(0)} s`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`bench: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
