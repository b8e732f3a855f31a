// `helper memory` (bounded resources): the resident memory of a memleak session's
// process (our CLI, which runs the same tracer code as the editor's helper) while it traces a
// program that allocates and frees 10k times a second (bench/workloads/mallocfree.c churn),
// reporting every second. Growth = RSS at the end minus RSS once the session settled (after
// the first reports and symbolization). Two rows: the default unwinding (frame pointers: the
// workload keeps them) and --unwind dwarf (every allocation's stack copied, ~80 MB/s through the
// ring buffer, and unwound by CFI in the tracer process).
import fs from 'node:fs';
import path from 'node:path';
import { LineProcess, round, sleep, startCli, type Attached, type BenchContext, type Row } from './lib';

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export async function benchHelperMemory(ctx: BenchContext): Promise<Row[]> {
  return [await measure(ctx, 'fp'), await measure(ctx, 'dwarf')];
}

async function measure(ctx: BenchContext, unwind: 'fp' | 'dwarf'): Promise<Row> {
  const seconds = ctx.quick ? (unwind === 'dwarf' ? 25 : 12) : 60;
  // dwarf: V8 sizes its young generation to the unwinding's allocation rate in the first ~15 s
  // (measured: RSS climbs ~20 MiB, then stays within a ~10 MiB band for minutes).
  const settle = unwind === 'dwarf' ? (ctx.quick ? 15 : 20) : ctx.quick ? 3 : 8;
  const churn = new LineProcess(path.join(ctx.buildDir, 'mallocfree'), ['churn', '10000']);
  let tracer: Attached | undefined;
  try {
    await churn.next('ready');
    tracer = await startCli(['memleak', '--pid', String(churn.pid), '--mode', 'uprobe', '--interval', '1', ...(unwind === 'dwarf' ? ['--unwind', 'dwarf'] : [])]);
    const pid = tracer.child.pid!;
    const samples: number[] = [];
    for (let s = 0; s <= seconds; s++) {
      samples.push(rssMiB(pid));
      if (s < seconds) await sleep(1000);
    }
    const start = samples[settle];
    const end = samples[samples.length - 1];
    const peak = Math.max(...samples.slice(settle));
    ctx.log(`  ${unwind}: RSS MiB by second: ${samples.map((x) => round(x, 1)).join(' ')}`);
    return {
      // The first row keeps its name, so earlier RESULTS.md figures still compare.
      name: unwind === 'fp' ? 'helper memory (memleak session RSS growth)' : 'helper memory, --unwind dwarf (memleak session RSS growth)',
      value: round(end - start, 1),
      unit: 'MiB',
      target: unwind === 'fp' ? 5 : 10,
      better: 'lower',
      peer: null,
      detail: `CLI memleak --pid${unwind === 'dwarf' ? ' --unwind dwarf' : ''} on a program doing 10k malloc+free/s from 4 call sites (~1000 live), reports every 1 s; RSS ${round(start, 1)} MiB at ${settle} s → ${round(end, 1)} MiB at ${seconds} s (peak ${round(peak, 1)} MiB, ${round(samples[0], 1)} MiB right after attach); target: flat within ${unwind === 'fp' ? 5 : 10} MiB${unwind === 'dwarf' ? ' (RSS saws by ~10 MiB as V8 collects between reports)' : ''}`,
    };
  } finally {
    await tracer?.stop();
    await churn.close();
  }
}
