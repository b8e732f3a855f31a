// The traced process's own activity over a session (CPU time, minor faults from /proc/PID/stat),
// so a session that saw no allocation while the process ran says so instead of "no leak", in
// every mode that traces a running process (uprobe and inject).
import { memleakSilence } from '../../model/memleakSilence';
import { readStat, type Stat } from '../../sys/proc/processes';

/**
 * The CPU time and minor faults of a traced process during the session (from /proc/PID/stat,
 * sampled while it lives, so an exit keeps the last reading).
 */
export class ProcessActivity {
  private readonly first: Stat | undefined;
  private last: Stat | undefined;
  constructor(private readonly pid: number) {
    this.first = this.last = readStat(pid);
  }

  sample(): void {
    this.last = readStat(this.pid) ?? this.last;
  }

  /** Why a session that saw no allocation while the process ran cannot be taken as "no leak". */
  silence(allocations: number, probed: string): string | undefined {
    this.sample();
    if (!this.first || !this.last) return undefined;
    return memleakSilence({ pid: this.pid, allocations, probed, cpuMs: (this.last.cpuTicks - this.first.cpuTicks) * 10, minorFaults: this.last.minflt - this.first.minflt });
  }
}
