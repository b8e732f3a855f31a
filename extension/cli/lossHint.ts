// What to say on stderr when a session ended with events lost in the kernel (ring buffer full)
// or dropped (a map full), naming the option that makes it less likely. `doctor` cannot know
// about past sessions, so the advice is given here, at the end of the session that lost data.
const ADVICE: Record<string, string> = {
  'java-gc': 'trace one JVM (--pid) instead of --all, or drop short pauses in the kernel with --min-us N',
  runqlat: 'narrow it with --pid P, or use --per-process instead of --per-thread (fewer histogram keys)',
  memleak: 'record fewer allocations with --sample-rate N (e.g. 10) or --min-size BYTES',
  profile: 'sample less often (--frequency 49) or for a shorter --duration (stacks are kept in a fixed-size kernel map)',
};

export function lossHint(result: unknown): string | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const r = result as { tracer?: string; lost?: unknown; dropped?: unknown };
  const lost = typeof r.lost === 'number' ? r.lost : 0;
  const dropped = typeof r.dropped === 'number' ? r.dropped : 0;
  if (lost <= 0 && dropped <= 0) return undefined;
  const what = [lost > 0 ? `${lost} events lost (kernel buffer full)` : '', dropped > 0 ? `${dropped} events dropped (a kernel map was full)` : ''].filter(Boolean).join(' and ');
  const advice = ADVICE[r.tracer ?? ''];
  return `ebpf-studio: ${what}: the figures above undercount${advice ? `; to lose less, ${advice}` : ''}`;
}
