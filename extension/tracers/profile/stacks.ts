// Turns the profiler's raw counts (pid, tid, stack ids) into the result document's stacks:
// reads each stack once, symbolizes every distinct address once per process (kernel addresses
// once overall), and marks frames kernel / native / jit / interpreted.
import type { Frame, ProcessImage, Symbolizer } from '../../sys/symbolize';
import type { FrameKind, ProfileFrame } from '../../protocol/frames';
import type { ProfileStack } from '../../protocol/profile';
import { type CountEntry, hex, stackIdLost } from './decode';

export type StackReader = (stackId: number) => BigUint64Array;

const lostFrame = (what: string): ProfileFrame => ({ address: '0x0', module: null, function: `[lost ${what} stack]`, file: null, line: null, kind: what === 'kernel' ? 'kernel' : 'native' });

function toFrame(address: bigint, f: Frame | undefined, fallbackKind: FrameKind): ProfileFrame {
  return {
    address: hex(address),
    module: f?.module && f.module !== '[unknown]' ? f.module : null,
    function: f?.function ?? null,
    file: f?.file ?? null,
    line: f?.line ?? null,
    kind: f?.kind ?? fallbackKind,
    ...(f?.offset ? { offset: f.offset } : {}),
  };
}

/** One address, leaf first: the functions inlined there (innermost first), then the real one. */
function expand(address: bigint, f: Frame | undefined, fallbackKind: FrameKind): ProfileFrame[] {
  const outer = toFrame(address, f, fallbackKind);
  if (!f?.inlined?.length) return [outer];
  const inner = f.inlined.map((x) => ({ ...outer, function: x.function, file: x.file ?? null, line: x.line ?? null, inlined: true }));
  return [...inner, outer];
}

/** Leaf (instruction pointer) and return addresses resolve to different lines: cache apart. */
const userKey = (a: bigint, i: number) => `${i === 0 ? 'L' : 'R'}${a}`;

/** Same as toFrame, for a frame we could not resolve at all (snapshot before symbolizing). */
export function unresolvedFrame(address: bigint, kind: FrameKind): ProfileFrame {
  return toFrame(address, undefined, kind);
}

export interface RawStack {
  entry: CountEntry;
  user: BigUint64Array;
  kernel: BigUint64Array;
  /** dwarf mode: why the user stack ends early, shown as its outermost frame */
  note?: string;
}

/** Reads each distinct stack id once. */
export function readStacks(entries: CountEntry[], read: StackReader): RawStack[] {
  const cache = new Map<number, BigUint64Array>();
  const get = (id: number) => {
    if (id < 0) return new BigUint64Array(0);
    let s = cache.get(id);
    if (!s) cache.set(id, (s = read(id)));
    return s;
  };
  return entries.map((entry) => ({ entry, user: get(entry.userStackId), kernel: get(entry.kernStackId) }));
}

/** Builds result stacks with frames from the caches (missing ones stay unresolved). */
export function assemble(raw: RawStack[], kernelFrames: Map<bigint, ProfileFrame[]>, userFrames: Map<number, Map<string, ProfileFrame[]>>): ProfileStack[] {
  const out: ProfileStack[] = [];
  for (const { entry, user, kernel, note } of raw) {
    const frames: ProfileFrame[] = [];
    if (stackIdLost(entry.kernStackId)) frames.push(lostFrame('kernel'));
    for (const a of kernel) frames.push(...(kernelFrames.get(a) ?? [unresolvedFrame(a, 'kernel')]));
    const perPid = userFrames.get(entry.pid);
    user.forEach((a, i) => frames.push(...(perPid?.get(userKey(a, i)) ?? [unresolvedFrame(a, 'native')])));
    if (stackIdLost(entry.userStackId)) frames.push(lostFrame('user'));
    if (note) frames.push({ ...lostFrame('user'), function: note });
    out.push({ count: entry.count, value: entry.count, pid: entry.pid, tid: entry.tid, comm: entry.comm, frames });
  }
  return out.sort((a, b) => b.count - a.count);
}

/**
 * Symbolizes every distinct address: kernel ones through kallsyms, user ones per process
 * through its image (the leaf is an instruction pointer; the others are return addresses,
 * whose line is that of the call). Results go into the caches used by assemble().
 */
export async function symbolizeStacks(
  raw: RawStack[],
  symbolizer: Symbolizer,
  imageOf: (pid: number) => ProcessImage | undefined,
  kernelFrames: Map<bigint, ProfileFrame[]>,
  userFrames: Map<number, Map<string, ProfileFrame[]>>,
  log: (m: string) => void,
  /** filled with module path → build-id for every module seen */
  buildIds?: Map<string, string>,
): Promise<void> {
  const kernelAddrs = new Set<bigint>();
  const userAddrs = new Map<number, Map<string, { addr: bigint; isReturn: boolean }>>();
  for (const { entry, user, kernel } of raw) {
    for (const a of kernel) if (!kernelFrames.has(a)) kernelAddrs.add(a);
    if (user.length === 0) continue;
    let u = userAddrs.get(entry.pid);
    if (!u) userAddrs.set(entry.pid, (u = new Map()));
    const known = userFrames.get(entry.pid);
    user.forEach((a, i) => {
      const key = userKey(a, i);
      if (!known?.has(key)) u.set(key, { addr: a, isReturn: i > 0 });
    });
  }
  if (kernelAddrs.size) {
    const addrs = [...kernelAddrs];
    try {
      const frames = await symbolizer.symbolizeKernel(addrs, { returnAddresses: addrs.map(() => true) });
      addrs.forEach((a, i) => kernelFrames.set(a, expand(a, frames[i], 'kernel')));
    } catch (e) {
      log(`profile: kernel symbolization failed: ${(e as Error).message}`);
    }
  }
  for (const [pid, wanted] of userAddrs) {
    const image = imageOf(pid);
    if (!image) continue;
    let cache = userFrames.get(pid);
    if (!cache) userFrames.set(pid, (cache = new Map()));
    const list = [...wanted];
    try {
      const frames = await symbolizer.symbolizeUser(
        image,
        list.map(([, v]) => v.addr),
        { returnAddresses: list.map(([, v]) => v.isReturn) },
      );
      list.forEach(([key, v], i) => {
        const f = frames[i];
        if (f?.buildId && buildIds) buildIds.set(f.module, f.buildId);
        cache.set(key, expand(v.addr, f, 'native'));
      });
    } catch (e) {
      log(`profile: symbolizing pid ${pid} failed: ${(e as Error).message}`);
    }
  }
}
