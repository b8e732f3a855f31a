// The traced process's own activity over a session (CPU time, minor faults from /proc/PID/stat),
// so a session that saw no allocation while the process ran says so instead of "no leak", in
// every mode that traces a running process (uprobe and inject).
import fs from 'node:fs';
import { memleakSilence } from '../../model/memleakSilence';

/**
 * The CPU time and minor faults of a traced process during the session (from /proc/PID/stat,
 * sampled while it lives, so an exit keeps the last reading).
 */
export class ProcessActivity {
  private readonly first: Activity | undefined;
  private last: Activity | undefined;
  constructor(private readonly pid: number) {
    this.first = this.last = readActivity(pid);
  }

  sample(): void {
    this.last = readActivity(this.pid) ?? this.last;
  }

  /** Why a session that saw no allocation while the process ran cannot be taken as "no leak". */
  silence(allocations: number, probed: string): string | undefined {
    this.sample();
    if (!this.first || !this.last) return undefined;
    return memleakSilence({ pid: this.pid, allocations, probed, cpuMs: (this.last.ticks - this.first.ticks) * 10, minorFaults: this.last.minflt - this.first.minflt });
  }
}

interface Activity {
  /** utime + stime in clock ticks (USER_HZ, 100 per second) */
  ticks: number;
  minflt: number;
}

function readActivity(pid: number): Activity | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ticks: Number(rest[11]) + Number(rest[12]), minflt: Number(rest[7]) };
  } catch {
    return undefined;
  }
}
