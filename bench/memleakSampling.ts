// `memleak sampling`: sampled leak profiles of a live process (memleak --pid P --sample-bytes N).
// Overhead: ns per malloc+free pair (bench/workloads/mallocfree.c) untraced, traced exactly, and
// sampled at 64 KiB and 512 KiB (tcmalloc's and Go's default), interleaved in one run. Accuracy:
// test/fixtures/c/leakmany.c leaks 100 MB over 20 sites (3-7 MB each, blocks of 16-1024 B) and
// prints the exact figures; the largest per-site error of the estimate is reported at 1 KiB and
// at 512 KiB, with the median standard error the tracer itself reported.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { MemleakResult } from '../extension/protocol/memleak';
import { cli, interleave, LineProcess, median, ratioOfRounds, root, round, startCli, type Attached, type BenchContext, type Row } from './lib';

interface Accuracy {
  maxErrPct: number;
  medianSePct: number;
  sites: number;
}

/** Attaches with --sample-bytes N to a fresh leakmany, lets it leak, reads the report while it lives. */
async function accuracy(bin: string, sampleBytes: number): Promise<Accuracy> {
  const target = new LineProcess(bin, []);
  try {
    await target.next('ready');
    const tracer = spawn(process.execPath, [cli, 'memleak', '--pid', String(target.child.pid), '--mode', 'uprobe', '--json', '--verbose', '--top', '0', '--interval', '60', '--sample-bytes', String(sampleBytes)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    tracer.stdout!.on('data', (d) => (out += d));
    tracer.stderr!.on('data', (d) => (err += d));
    const exited = new Promise<void>((resolve) => tracer.once('exit', () => resolve()));
    const deadline = Date.now() + 30_000;
    while (!/attached in/.test(err)) {
      if (Date.now() > deadline || tracer.exitCode !== null) throw new Error(`memleak did not attach: ${err.slice(-500)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    target.send('go');
    const exact = new Map<string, number>();
    for (;;) {
      const line = await target.next('');
      const m = /^site (\d+) (\d+)/.exec(line);
      if (m) exact.set(`site_${m[1]}`, Number(m[2]));
      if (line.startsWith('leaked')) break;
    }
    tracer.kill('SIGINT');
    await exited;
    const r = JSON.parse(out) as MemleakResult;
    const est = new Map<string, { bytes: number; se: number }>();
    for (const s of r.stacks) {
      const fn = s.frames[0]?.function;
      if (!fn || !exact.has(fn)) continue;
      const had = est.get(fn) ?? { bytes: 0, se: 0 };
      est.set(fn, { bytes: had.bytes + s.bytes, se: Math.hypot(had.se, s.bytesStdErr ?? 0) });
    }
    const errs = [...exact].map(([fn, b]) => Math.abs(((est.get(fn)?.bytes ?? 0) - b) / b) * 100);
    const ses = [...exact].map(([fn, b]) => ((est.get(fn)?.se ?? 0) / b) * 100);
    return { maxErrPct: round(Math.max(...errs), 1), medianSePct: round(median(ses), 1), sites: est.size };
  } finally {
    target.child.kill('SIGKILL');
    await target.close();
  }
}

export async function benchMemleakSampling(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 7;
  const pairs = { untraced: 4_000_000, probed: ctx.quick ? 25_000 : 60_000 };
  const bin = path.join(ctx.buildDir, 'mallocfree');
  const many = path.join(ctx.buildDir, 'leakmany');
  const src = path.join(root, 'test', 'fixtures', 'c', 'leakmany.c');
  if (!fs.existsSync(many) || fs.statSync(many).mtimeMs < fs.statSync(src).mtimeMs) {
    const c = spawnSync('gcc', ['-O2', '-g', '-fno-omit-frame-pointer', '-o', many, src], { encoding: 'utf8' });
    if (c.status !== 0) throw new Error(`gcc leakmany.c: ${c.stderr}`);
  }
  const intervals = { exact: 0, s64k: 65536, s512k: 524288 };
  const procs: Record<string, LineProcess> = { untraced: new LineProcess(bin, ['bench']) };
  for (const k of Object.keys(intervals)) procs[k] = new LineProcess(bin, ['bench']);
  const tracers: Attached[] = [];
  try {
    for (const p of Object.values(procs)) await p.next('ready');
    for (const [k, n] of Object.entries(intervals)) tracers.push(await startCli(['memleak', '--pid', String(procs[k].pid), '--mode', 'uprobe', '--sample-bytes', String(n), '--interval', '60']));
    for (const [k, p] of Object.entries(procs)) await p.ask(String(k === 'untraced' ? pairs.untraced : pairs.probed / 10), 'ns_per_op');
    const variants: Record<string, () => Promise<number>> = {};
    for (const [k, p] of Object.entries(procs)) variants[k] = () => p.ask(String(k === 'untraced' ? pairs.untraced : pairs.probed), 'ns_per_op');
    const r = await interleave(rounds, variants, ctx.log);
    const ns = (k: string) => round(median(r[k]), 1);
    const fine = await accuracy(many, 1024);
    const coarse = await accuracy(many, 524288);
    ctx.log(`  accuracy: 1 KiB ${JSON.stringify(fine)}, 512 KiB ${JSON.stringify(coarse)}`);
    return [
      {
        name: 'memleak sampled attach (ns per malloc+free, --sample-bytes 524288)',
        value: ns('s512k'),
        unit: 'ns',
        target: null,
        better: 'lower',
        peer: { name: 'exact (--sample-bytes 0)', value: ns('exact') },
        detail:
          `same run, interleaved, median ns per malloc+free pair: untraced ${ns('untraced')}, exact ${ns('exact')}, sampled at 64 KiB ${ns('s64k')}, at 512 KiB ${ns('s512k')}; ` +
          `sampled / exact ${round(ratioOfRounds(r.s512k, r.exact), 2)}× at 512 KiB, ${round(ratioOfRounds(r.s64k, r.exact), 2)}× at 64 KiB: sampling skips the stack walk and the table insert of unsampled calls, ` +
          'but every call still takes the uprobe and uretprobe traps, which are most of the cost',
      },
      {
        name: 'memleak sampled estimate, largest per-site error (--sample-bytes 1024, 100 MB over 20 sites)',
        value: fine.maxErrPct,
        unit: '%',
        target: 10,
        better: 'lower',
        peer: { name: 'same at 512 KiB', value: coarse.maxErrPct },
        detail:
          `test/fixtures/c/leakmany.c, live, attach mode: ${fine.sites} sites of 3-7 MB in 16-1024 B blocks; at 1 KiB the largest |estimate - exact| is ${fine.maxErrPct} % with a median reported standard error of ${fine.medianSePct} %; ` +
          `at 512 KiB ${coarse.maxErrPct} % (median s.e. ${coarse.medianSePct} %, ${coarse.sites} sites seen): the standard error of a site of B bytes is about sqrt(N/B), so a 512 KiB interval resolves sites of hundreds of MB to ±10 %, not sites of a few MB`,
      },
    ];
  } finally {
    for (const t of tracers) await t.stop();
    for (const p of Object.values(procs)) await p.close();
  }
}
