// What to say on stderr when a session ended with events lost in the kernel (ring buffer full)
// or dropped (a map full), naming the option that makes it less likely. `doctor` repeats the
// advice when it happens often (tracers/lossHistory.ts).
import { LOSS_ADVICE, lossOf } from '../tracers/lossHistory';

/** What `lost` counts, where it is not ring-buffer events. */
const LOST_WHAT: Record<string, string> = {
  profile: 'samples lost (their stacks found no room in the kernel stack map)',
};

export function lossHint(result: unknown): string | undefined {
  const loss = lossOf(result);
  if (!loss) return undefined;
  const what = [loss.lost > 0 ? `${loss.lost} ${LOST_WHAT[loss.tracer] ?? 'events lost (kernel buffer full)'}` : '', loss.dropped > 0 ? `${loss.dropped} events dropped (a kernel map was full)` : ''].filter(Boolean).join(' and ');
  const advice = LOSS_ADVICE[loss.tracer];
  return `ebpf-studio: ${what}: the figures above undercount${advice ? `; to lose less, ${advice}` : ''}`;
}
