// What the two memleak tracers do alike once they hold allocation records: the uprobe tracer
// (memleak.ts) reads them from BPF maps and the preload tracer (memleakPreload.ts) from the file
// its interposer writes, but from there on a session is the same. Kept in one place so the two
// modes keep producing the same MemleakResult and the same updates, and end the same way.
import type { Frame } from '../../sys/symbolize';
import type { MemleakFrame, MemleakResult, MemleakStack, MemleakUpdate } from '../../protocol/memleak';
import type { SessionEvents } from '../tracer';
import { ageMs, finalUpdate, type StackAggregate } from './decode';

export function toFrame(f: Frame): MemleakFrame {
  const out: MemleakFrame = { address: f.address, module: f.module };
  if (f.function) out.function = f.function;
  else if (f.offset) out.offset = f.offset;
  if (f.file) out.file = f.file;
  if (f.line) out.line = f.line;
  if (f.column) out.column = f.column;
  if (f.inlined && f.inlined.length) out.inlined = f.inlined.map((i) => ({ function: i.function, file: i.file, line: i.line, column: i.column }));
  return out;
}

/**
 * The symbolized frames of each stack id. A stored stack never changes, so each is symbolized
 * once; one with a frame outside every known module may lie in a library loaded after the last
 * capture of the target's modules, so it stays provisional and is tried again next time.
 */
export class StackFrames {
  private readonly done = new Map<number, MemleakFrame[]>();
  private readonly provisional = new Map<number, MemleakFrame[]>();

  /** The ids among `ids` still to symbolize (negative ids are stacks that could not be stored). */
  todo(ids: number[]): number[] {
    return [...new Set(ids)].filter((id) => id >= 0 && !this.done.has(id));
  }

  /** Keeps the frames of the `todo` stacks: `resolved` holds theirs flat, in order (undefined when symbolization failed). */
  store(todo: number[], stacks: bigint[][], resolved: Frame[] | undefined): void {
    let k = 0;
    todo.forEach((id, i) => {
      const list = stacks[i].map((a) => {
        const f = resolved?.[k++];
        return f ? toFrame(f) : { address: '0x' + a.toString(16), module: '[unknown]' };
      });
      if (resolved && list.every((f) => f.module !== '[unknown]')) {
        this.done.set(id, list);
        this.provisional.delete(id);
      } else {
        this.provisional.set(id, list);
      }
    });
  }

  of(id: number): MemleakFrame[] {
    return this.done.get(id) ?? this.provisional.get(id) ?? [];
  }
}

/** One reported stack: an aggregate with its frames, its oldest allocation's age taken at `nowNs`. */
export function toStack(a: StackAggregate, nowNs: bigint, frames: MemleakFrame[]): MemleakStack {
  const s: MemleakStack = { bytes: a.bytes, allocations: a.allocations, oldestAgeMs: ageMs(nowNs, a.oldestNs), frames };
  if (a.bytesStdErr !== undefined) Object.assign(s, { bytesStdErr: a.bytesStdErr, allocationsStdErr: a.allocationsStdErr });
  return s;
}

/** A live update: totals over every aggregate of the report, and the stacks shown. */
export function liveUpdate(atMs: number, aggs: StackAggregate[], stacks: MemleakStack[], dropped: number, sampleBytes: number | undefined): MemleakUpdate {
  const u: MemleakUpdate = {
    atMs,
    totalBytes: aggs.reduce((s, a) => s + a.bytes, 0),
    totalAllocations: aggs.reduce((s, a) => s + a.allocations, 0),
    stacks,
    dropped,
  };
  if (sampleBytes) u.sampleBytes = sampleBytes;
  return u;
}

/** The session's end message for a launched command that exited. */
export function exitMessage(command: string, exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return `${command} exited ${exit.signal ? `on signal ${exit.signal}` : `with code ${exit.code}`}`;
}

/**
 * The reporting of one leak session: reports run one at a time (a slow symbolization must not
 * overlap the next tick), what a launched program printed rides on the next update, and the
 * session ends once, either by itself (finish: the target exited) or by stop, with one final
 * result that later snapshots and stops return.
 */
export class LeakReports {
  /** set once the session has detached: no report starts after that */
  closed = false;
  /** the result the session ended with */
  result: MemleakResult | undefined;
  /** what the launched program printed since the last update */
  output = '';
  private chain: Promise<unknown> = Promise.resolve();

  /** `teardown` detaches the session; it runs once, at the first close(). */
  constructor(
    private readonly events: SessionEvents<'memleak'>,
    private readonly teardown: () => void,
  ) {}

  serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn);
    this.chain = p.catch(() => undefined);
    return p;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.teardown();
  }

  /** Sends a live update, with what the program printed since the last one. */
  update(u: MemleakUpdate): void {
    if (this.output) {
      u.output = this.output;
      this.output = '';
    }
    this.events.update(u);
  }

  /**
   * The target is gone: reads the final result, closes, sends what the program printed last
   * (with the final numbers, at `atMs()`) and ends the session with `message`.
   */
  async finish(message: string, read: () => Promise<MemleakResult>, atMs: () => number): Promise<void> {
    if (this.closed || this.result) return;
    let r: MemleakResult | undefined;
    try {
      r = await this.serial(async () => (this.closed ? undefined : read()));
    } catch (e) {
      this.close();
      this.events.ended('error', `reading the final report failed: ${(e as Error).message}`);
      return;
    }
    if (!r || this.result) return;
    this.result = r;
    this.close();
    if (this.output) {
      this.events.update(finalUpdate(r, atMs(), this.output));
      this.output = '';
    }
    this.events.ended('target-exited', message);
  }

  /**
   * Stop: the final result (`empty()` when the session closed without one). When this call is
   * the one that ends the session, `stopped` runs after the close.
   */
  async stop(read: () => Promise<MemleakResult>, empty: () => MemleakResult, stopped: () => void): Promise<MemleakResult> {
    if (this.result) return this.result;
    if (this.closed) return empty();
    const r = await this.serial(async () => (this.closed ? undefined : read()));
    if (this.result) return this.result;
    if (!r) return empty();
    this.result = r;
    this.close();
    stopped();
    return r;
  }
}
