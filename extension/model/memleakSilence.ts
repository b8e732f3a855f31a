// memleak's uprobe session against the traced process's own activity: no allocation seen while
// the process ran (touched new memory) is no evidence of "no leak" but of probes on the
// wrong allocator or file, and is said as such. Pure.

export interface MemleakActivity {
  pid: number;
  /** allocations the probes saw in the session */
  allocations: number;
  /** the process's utime + stime over the session (ms); undefined when unreadable */
  cpuMs?: number;
  /** its minor page faults over the session (first touches of new memory: heap growth among them) */
  minorFaults?: number;
  /** what the probes are on, for the message */
  probed: string;
}

/** Minor faults (4 KiB pages first touched) in a session below which no allocation seen is believed. */
export const SILENCE_MIN_FAULTS = 64;

/** Why a session that saw no allocation while the process ran cannot be taken as "no leak"; undefined when it can. */
export function memleakSilence(x: MemleakActivity): string | undefined {
  if (x.allocations > 0) return undefined;
  const cpu = x.cpuMs ?? 0;
  const faults = x.minorFaults ?? 0;
  // CPU alone is no evidence: a program may compute for minutes without allocating. New memory
  // touched is: a leak, through any allocator, grows the process. A few faults are not (a stack
  // page, a lazily bound symbol, the injected library's own start).
  if (faults < SILENCE_MIN_FAULTS) return undefined;
  const did = [cpu > 0 ? `${cpu} ms of CPU` : '', faults > 0 ? `${faults} minor page faults: it touched new memory` : ''].filter(Boolean).join(', ');
  return (
    `no allocation was seen in pid ${x.pid} while it ran (${did} during the session): the probes are on ${x.probed}. ` +
    'Likely cause: it allocates through another allocator (jemalloc, tcmalloc, its own: give it with --allocator-lib PATH), ' +
    'its libc is not the file probed, or it did not allocate while traced'
  );
}
