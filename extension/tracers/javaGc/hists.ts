// Metrics-only mode of the Java GC tracer: pauses and safepoints counted in the kernel's `hists`
// map (bpf/java-gc.h) instead of one ring-buffer record each. A metrics service (the agent) needs
// only the counts per bucket, and at hundreds of pauses a second per JVM the records and their
// decoding were most of its CPU time; here user space reads a few map entries per JVM a second.
import type { BpfObject } from '../../../native/index';
import type { JavaGcPauseCounts } from '../../protocol/javaGc';
import { HistEpochs } from '../histEpochs';
import { decodeHistEntries, JAVA_GC_HIST_KEY_SIZE } from './decode';

export class GcHistReader {
  private readonly epochs: HistEpochs;
  private reading?: Promise<void>;
  private pending: JavaGcPauseCounts[] = [];

  constructor(obj: BpfObject) {
    this.epochs = new HistEpochs(obj, JAVA_GC_HIST_KEY_SIZE, 'hists', 'ctl');
  }

  /** Reads and resets the kernel's counts (kept for take()); joins a read already running. */
  read(closed: () => boolean): Promise<void> {
    this.reading ??= this.epochs
      .take(closed)
      .then((r) => {
        if (r) this.pending.push(...decodeHistEntries(r.dump.keys, r.dump.values, r.dump.count));
      })
      .finally(() => (this.reading = undefined));
    return this.reading;
  }

  /** The last read once the probes are gone: what a read running now missed too. */
  async final(): Promise<void> {
    await this.reading?.catch(() => undefined);
    await this.read(() => false);
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** The counts read since the last take(). */
  take(): JavaGcPauseCounts[] {
    const p = this.pending;
    this.pending = [];
    return p;
  }
}
