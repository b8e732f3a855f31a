// `helper memory` (issue 10, bounded resources): the resident memory of a memleak session's
// process (our CLI, which runs the same tracer code as the editor's helper) while it traces a
// program that allocates and frees 10k times a second (bench/workloads/mallocfree.c churn),
// reporting every second. Growth = RSS at the end minus RSS once the session settled (after
// the first reports and symbolization).
import fs from 'node:fs';
import path from 'node:path';
import { LineProcess, round, sleep, startCli, type Attached, type BenchContext, type Row } from './lib';

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export async function benchHelperMemory(ctx: BenchContext): Promise<Row[]> {
  const seconds = ctx.quick ? 12 : 60;
  const settle = ctx.quick ? 3 : 8;
  const churn = new LineProcess(path.join(ctx.buildDir, 'mallocfree'), ['churn', '10000']);
  let tracer: Attached | undefined;
  try {
    await churn.next('ready');
    tracer = await startCli(['memleak', '--pid', String(churn.pid), '--interval', '1']);
    const pid = tracer.child.pid!;
    const samples: number[] = [];
    for (let s = 0; s <= seconds; s++) {
      samples.push(rssMiB(pid));
      if (s < seconds) await sleep(1000);
    }
    const start = samples[settle];
    const end = samples[samples.length - 1];
    const peak = Math.max(...samples.slice(settle));
    ctx.log(`  RSS MiB by second: ${samples.map((x) => round(x, 1)).join(' ')}`);
    return [
      {
        name: 'helper memory (memleak session RSS growth)',
        value: round(end - start, 1),
        unit: 'MiB',
        target: 5,
        better: 'lower',
        peer: null,
        detail: `CLI memleak --pid on a program doing 10k malloc+free/s from 4 call sites (~1000 live), reports every 1 s; RSS ${round(start, 1)} MiB at ${settle} s → ${round(end, 1)} MiB at ${seconds} s (peak ${round(peak, 1)} MiB, ${round(samples[0], 1)} MiB right after attach); target: flat within 5 MiB`,
      },
    ];
  } finally {
    await tracer?.stop();
    await churn.close();
  }
}
