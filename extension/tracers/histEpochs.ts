// The user-space half of bpf/hist_epoch.bpf.h: reads and resets in-kernel histograms each
// interval while the programs keep adding to them. Each take() writes a new epoch into the
// `ctl` map, waits for programs that read the old epoch to finish, then dumps the histogram map
// and deletes the entries of earlier epochs. Decoding the entries is the tracer's (its decode.ts).
import type { BpfObject, MapDump } from '../../native/index';

/** A program that read the old epoch just before the flip finishes within microseconds. */
const SETTLE_MS = 2;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

export class HistEpochs {
  private epoch = 0;

  /** `keySize`: bytes of the histogram map's key, whose last 4 are the epoch (u32). */
  constructor(
    private readonly obj: BpfObject,
    private readonly keySize: number,
    private readonly map = 'hists',
    private readonly ctl = 'ctl',
  ) {}

  /**
   * Starts a new epoch and returns the entries of the earlier ones (deleted from the map) with
   * the time the epoch ended (CLOCK_MONOTONIC ns); undefined when `closed()` turned true while
   * waiting. Calls must not overlap.
   */
  async take(closed: () => boolean): Promise<{ dump: MapDump; endedNs: number } | undefined> {
    this.epoch = (this.epoch + 1) >>> 0;
    this.obj.mapUpdate(this.ctl, u32(0), u32(this.epoch));
    const endedNs = Number(process.hrtime.bigint());
    await sleep(SETTLE_MS);
    if (closed()) return undefined;
    const all = this.obj.mapDump(this.map);
    const ks = this.keySize;
    const vs = all.count ? all.values.length / all.count : 0;
    const keys: Buffer[] = [];
    const values: Buffer[] = [];
    for (let i = 0; i < all.count; i++) {
      const key = Buffer.from(all.keys.subarray(i * ks, (i + 1) * ks));
      if (key.readUInt32LE(ks - 4) === this.epoch) continue;
      keys.push(key);
      values.push(all.values.subarray(i * vs, (i + 1) * vs));
      this.obj.mapDelete(this.map, key);
    }
    return { dump: { keys: Buffer.concat(keys), values: Buffer.concat(values), count: keys.length }, endedNs };
  }
}
