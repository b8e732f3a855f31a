// What to say on stderr when a session ended with events lost in the kernel (ring buffer full)
// or dropped (a map full), naming the option that makes it less likely. `doctor` repeats the
// advice when it happens often (tracers/lossHistory.ts).
import { adviceFor, lossOf, lostWhat } from '../tracers/lossHistory';

export function lossHint(result: unknown): string | undefined {
  const loss = lossOf(result);
  if (!loss) return undefined;
  // off-CPU and wall profiles are profile documents in µs: what they lose are intervals' stacks
  // (runqlat's results have a unit of µs too, but it is the histograms')
  const doc = result as { tracer?: string; unit?: string; mode?: string };
  const timed = doc.tracer === 'profile' && doc.unit === 'us';
  // memleak's preload and inject modes keep their tables in the traced process, not in the kernel
  const inProcess = doc.mode === 'preload' || doc.mode === 'inject';
  const lost = timed ? { noun: 'off-CPU intervals or samples', cause: 'their stacks found no room in the kernel stack map, or a totals map was full' } : lostWhat(loss.tracer, result);
  const full = inProcess ? 'a table of the leak tracer in the process was full' : 'a kernel map was full';
  const what = [loss.lost > 0 ? `${loss.lost} ${lost.noun} lost (${lost.cause})` : '', loss.dropped > 0 ? `${loss.dropped} events dropped (${full})` : ''].filter(Boolean).join(' and ');
  const advice =
    inProcess
      ? 'allow more with --max-outstanding N, or record fewer with --min-size BYTES'
      : timed
        ? 'leave out short waits with --min-block-us N, trace one process (--pid), or keep more stacks with --stack-storage-size N'
        : adviceFor(loss.tracer);
  return `ebpf-studio: ${what}: the figures above undercount${advice ? `; to lose less, ${advice}` : ''}`;
}
