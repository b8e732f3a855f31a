// What to say on stderr when a session ended with events lost in the kernel (ring buffer full)
// or dropped (a map full), naming the option that makes it less likely. `doctor` repeats the
// advice when it happens often (tracers/lossHistory.ts).
import { adviceFor, lossOf, lostWhat } from '../tracers/lossHistory';

export function lossHint(result: unknown): string | undefined {
  const loss = lossOf(result);
  if (!loss) return undefined;
  const lost = lostWhat(loss.tracer, result);
  // memleak's preload mode keeps its tables in the traced process, not in the kernel
  const full = (result as { mode?: string }).mode === 'preload' ? 'a table of the leak tracer in the process was full' : 'a kernel map was full';
  const what = [loss.lost > 0 ? `${loss.lost} ${lost.noun} lost (${lost.cause})` : '', loss.dropped > 0 ? `${loss.dropped} events dropped (${full})` : ''].filter(Boolean).join(' and ');
  const advice = (result as { mode?: string }).mode === 'preload' ? 'allow more with --max-outstanding N, or record fewer with --min-size BYTES' : adviceFor(loss.tracer);
  return `ebpf-studio: ${what}: the figures above undercount${advice ? `; to lose less, ${advice}` : ''}`;
}
