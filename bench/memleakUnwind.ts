// `memleak CFI stacks`: what a leak stack unwound by CFI costs per allocation, next to
// the frame-pointer walk, on the malloc/free loop (bench/workloads/mallocfree.c), in three
// processes side by side: untraced, `memleak --pid --unwind fp`, `memleak --pid --unwind dwarf`.
// In dwarf mode each recorded allocation copies registers and the top of the stack into a ring
// buffer (in the target, at the uretprobe), and the tracer unwinds it in user space; the row
// reports the target's cost per pair, the tracer's unwind time per stack, and how many copies
// the tracer could not keep up with (counted as stacks lost, never silently).
import path from 'node:path';
import { interleave, LineProcess, median, round, startCli, type Attached, type BenchContext, type Row } from './lib';

export async function benchMemleakUnwind(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 7;
  const pairs = { untraced: 2_000_000, probed: ctx.quick ? 20_000 : 50_000 };
  const bin = path.join(ctx.buildDir, 'mallocfree');
  const procs = { untraced: new LineProcess(bin, ['bench']), fp: new LineProcess(bin, ['bench']), dwarf: new LineProcess(bin, ['bench']) };
  const tracers: Attached[] = [];
  try {
    for (const p of Object.values(procs)) await p.next('ready');
    tracers.push(await startCli(['memleak', '--pid', String(procs.fp.pid), '--mode', 'uprobe', '--unwind', 'fp']));
    tracers.push(await startCli(['memleak', '--pid', String(procs.dwarf.pid), '--mode', 'uprobe', '--unwind', 'dwarf']));
    const run = (p: LineProcess, n: number) => () => p.ask(String(n), 'ns_per_op');
    for (const [k, p] of Object.entries(procs)) await p.ask(String(k === 'untraced' ? pairs.untraced : pairs.probed / 10), 'ns_per_op');
    const r = await interleave(rounds, { untraced: run(procs.untraced, pairs.untraced), fp: run(procs.fp, pairs.probed), dwarf: run(procs.dwarf, pairs.probed) }, ctx.log);
    const ns = (k: keyof typeof r) => round(median(r[k]), 1);
    return [
      {
        name: 'memleak CFI leak stacks (ns per malloc+free pair, --unwind dwarf)',
        value: ns('dwarf'),
        unit: 'ns',
        target: null,
        better: 'lower',
        peer: { name: 'frame pointers (--unwind fp)', value: ns('fp') },
        detail: `median of ${rounds} interleaved rounds of ${pairs.probed.toLocaleString('en-US')} pairs; untraced ${ns('untraced')} ns. Each recorded allocation copies up to 8 KiB of stack (--stack-copy-kb) into a ring buffer at the uretprobe; unwinding happens in the tracer, and copies it cannot keep up with are counted as lost stacks. Use --unwind fp where frame pointers are enough, or sample.`,
      },
    ];
  } finally {
    for (const t of tracers) await t.stop();
    for (const p of Object.values(procs)) await p.close();
  }
}
