// Pure half of the Java heap tracer (no I/O): parses the heap records native/jvmagent/agent.c
// writes (H, M, O, F, G, T, E lines), weights each sampled object so that totals are unbiased
// estimates, tracks which sampled objects the GCs have not collected, and builds per-site figures:
// live bytes and objects with standard errors, GCs survived, growth per second, leak evidence.
import type { JavaAllocStack, JavaHeapFrame, JavaHeapStack } from '../../protocol/javaHeap';
import { sampleProbability } from '../../model/memleakSampling';
import { javaSourcePath, type JavaMethod } from '../javaAgent/decode';

/** "[B" → "byte[]", "[[Ljava/lang/String;" → "java.lang.String[][]", "Ljava/util/HashMap$Node;" → "java.util.HashMap$Node". */
export function javaClassName(signature: string): string {
  let dims = 0;
  while (signature[dims] === '[') dims++;
  const base = signature.slice(dims);
  const prim: Record<string, string> = { B: 'byte', C: 'char', D: 'double', F: 'float', I: 'int', J: 'long', S: 'short', Z: 'boolean', V: 'void' };
  let name: string;
  if (base.startsWith('L') && base.endsWith(';')) name = base.slice(1, -1).replace(/\//g, '.');
  else if (base.length === 1 && prim[base]) name = prim[base];
  else name = base.replace(/\//g, '.');
  return name + '[]'.repeat(dims);
}

interface FrameRef {
  method: number;
  bci: number;
  line: number;
}

/** Running weighted sums of a group of sampled objects (Horvitz-Thompson, as memleakSampling.ts explains). */
class Weighted {
  bytes = 0;
  objects = 0;
  bytesVar = 0;
  objectsVar = 0;
  samples = 0;

  add(size: number, interval: number, sign = 1): void {
    const p = sampleProbability(size, interval);
    if (p <= 0) return;
    const q = (1 - p) / (p * p);
    this.bytes += (sign * size) / p;
    this.objects += sign / p;
    this.bytesVar += sign * q * size * size;
    this.objectsVar += sign * q;
    this.samples += sign;
  }

  get bytesStdErr(): number {
    return Math.sqrt(Math.max(0, this.bytesVar));
  }

  get objectsStdErr(): number {
    return Math.sqrt(Math.max(0, this.objectsVar));
  }
}

interface Site {
  key: string;
  cls: string;
  frames: FrameRef[];
  allocated: Weighted;
  /** every tracked sampled object not yet collected, including those no GC has judged yet */
  live: Weighted;
  /** as of the last GC scan: the objects allocated before that GC and still alive after it */
  judged: Weighted;
  /** the oldest of those (GCs before its allocation, its time) */
  oldest?: { gc: number; tsNs: bigint };
  /** live bytes after each GC scan that found this site with a live object: [ms since start, bytes] */
  series: [number, number][];
}

interface LiveObject {
  site: Site;
  size: number;
  gc: number;
  tsNs: bigint;
}

const MAX_SERIES = 512;

/** Leak evidence from a site's live bytes after each GC (pure, unit-tested). */
export function leakEvidence(series: [number, number][], survivedGcs: number, liveStdErr: number): { candidate: boolean; slope: number; evidence: string } {
  const n = series.length;
  if (n < 2) return { candidate: false, slope: 0, evidence: 'not enough GCs yet to tell' };
  const mx = series.reduce((a, p) => a + p[0], 0) / n;
  const my = series.reduce((a, p) => a + p[1], 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of series) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  const slope = sxx > 0 ? (sxy / sxx) * 1000 : 0; // bytes per second (x in ms)
  let up = 0;
  let changes = 0;
  for (let i = 1; i < n; i++) {
    if (series[i][1] === series[i - 1][1]) continue;
    changes++;
    if (series[i][1] > series[i - 1][1]) up++;
  }
  const first = series[0][1];
  const last = series[n - 1][1];
  const third = series[Math.floor((n - 1) / 3)][1];
  const secs = (series[n - 1][0] - series[0][0]) / 1000;
  const grew = changes >= 3 && up / changes >= 0.7 && last > 1.5 * third && last > first && last > 3 * liveStdErr && slope > 0;
  const candidate = grew && survivedGcs >= 2;
  const mb = (b: number) => `${(b / 1e6).toFixed(b < 1e7 ? 2 : 1)} MB`;
  const evidence = `live bytes rose after ${up} of ${changes} GCs that changed them, ${mb(first)} → ${mb(last)} over ${secs.toFixed(1)} s (${slope >= 0 ? '+' : ''}${mb(slope)}/s); oldest sampled object survived ${survivedGcs} GCs`;
  return { candidate, slope, evidence };
}

/**
 * The session's state: fed the agent's text as it grows, asked for figures at any time.
 * Memory grows with distinct sites and live sampled objects, not with samples.
 */
export class JavaHeapModel {
  readonly methods = new Map<number, JavaMethod>();
  private readonly sites = new Map<string, Site>();
  private readonly live = new Map<number, LiveObject>();
  interval = 0;
  agentPid?: number;
  startNs?: bigint;
  startGcs = 0;
  gcs = 0;
  lastScanNs?: bigint;
  samples = 0;
  untracked = 0;
  ended = false;
  dropped = 0;
  callbackNs = 0;
  endSamples = 0;
  private tail = '';

  constructor(interval: number) {
    this.interval = interval;
  }

  /** Parses the complete lines of `chunk` (a partial last line waits for the next call). */
  feed(chunk: string): void {
    const text = this.tail + chunk;
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl < 0) break;
      this.line(text.slice(start, nl).split('\t'));
      start = nl + 1;
    }
    this.tail = text.slice(start);
  }

  private line(f: string[]): void {
    switch (f[0]) {
      case 'H':
        this.agentPid = Number(f[1]);
        this.startNs = BigInt(f[2]);
        this.interval = Number(f[3]) || this.interval;
        this.startGcs = this.gcs = Number(f[4]) || 0;
        break;
      case 'M':
        this.methods.set(Number(f[1]), { className: f[2] ?? '?', method: f[3] ?? '?', sourceFile: f[4] && f[4] !== '-' ? f[4] : null, native: f[5] === '1' });
        break;
      case 'O': {
        const id = Number(f[1]);
        const tsNs = BigInt(f[2]);
        const size = Number(f[4]);
        const gc = Number(f[5]);
        const cls = f[6] ?? '?';
        const frames: FrameRef[] = [];
        for (let i = 7; i < f.length; i++) {
          const [method, bci, line] = f[i].split(':').map(Number);
          frames.push({ method, bci, line });
        }
        const key = `${cls}|${frames.map((r) => `${r.method}:${r.line}`).join(',')}`;
        let site = this.sites.get(key);
        if (!site) this.sites.set(key, (site = { key, cls, frames, allocated: new Weighted(), live: new Weighted(), judged: new Weighted(), series: [] }));
        site.allocated.add(size, this.interval);
        this.samples++;
        if (id > 0) {
          site.live.add(size, this.interval);
          this.live.set(id, { site, size, gc, tsNs });
        } else this.untracked++;
        break;
      }
      case 'F': {
        const o = this.live.get(Number(f[1]));
        if (!o) break;
        o.site.live.add(o.size, this.interval, -1);
        this.live.delete(Number(f[1]));
        break;
      }
      case 'G': {
        this.gcs = Number(f[1]);
        this.lastScanNs = BigInt(f[2]);
        const atMs = this.startNs !== undefined ? Number(this.lastScanNs - this.startNs) / 1e6 : 0;
        // Live means survived a GC: an object allocated since the last GC is not garbage or live
        // yet (most of a young generation is garbage no GC has looked at).
        for (const s of this.sites.values()) {
          s.judged = new Weighted();
          s.oldest = undefined;
        }
        for (const o of this.live.values()) {
          if (o.gc >= this.gcs) continue;
          o.site.judged.add(o.size, this.interval);
          if (!o.site.oldest || o.tsNs < o.site.oldest.tsNs) o.site.oldest = { gc: o.gc, tsNs: o.tsNs };
        }
        for (const s of this.sites.values()) {
          if (s.judged.samples <= 0 && !s.series.length) continue;
          s.series.push([atMs, s.judged.bytes]);
          if (s.series.length > MAX_SERIES) s.series = s.series.filter((_, i) => i % 2 === 0 || i === s.series.length - 1);
        }
        break;
      }
      case 'T':
        break; // heartbeat: the agent is alive (GCs count once scanned, G)
      case 'E':
        this.ended = true;
        this.endSamples = Number(f[1]) || 0;
        this.dropped = Number(f[2]) || 0;
        this.callbackNs = Number(f[3]) || 0;
        break;
      default:
        break; // a newer agent's record: skip
    }
  }

  private frameOf(r: FrameRef): JavaHeapFrame {
    const m = this.methods.get(r.method);
    if (!m) return { address: '0x0', module: '[java]', function: '[unknown Java method]' };
    const f: JavaHeapFrame = { address: '0x0', module: '[java]', function: `${m.className}.${m.method}` };
    const file = javaSourcePath(m.className, m.sourceFile);
    if (file) f.file = file;
    if (!m.native && r.line > 0) f.line = r.line;
    return f;
  }

  /** GCs the session has seen (scanned). */
  get sessionGcs(): number {
    return this.gcs - this.startGcs;
  }

  /** Live sites, most live bytes first; `nowNs` (CLOCK_MONOTONIC) dates the ages. */
  liveStacks(nowNs: bigint, top = 0): JavaHeapStack[] {
    const out: JavaHeapStack[] = [];
    for (const s of this.sites.values()) {
      if (s.judged.samples <= 0) continue;
      const old = s.oldest;
      const survivedGcs = old ? Math.max(0, this.gcs - old.gc) : 0;
      const ev = leakEvidence(s.series, survivedGcs, s.judged.bytesStdErr);
      const st: JavaHeapStack = {
        bytes: Math.round(s.judged.bytes),
        allocations: Math.round(s.judged.objects),
        bytesStdErr: Math.round(s.judged.bytesStdErr),
        allocationsStdErr: Math.round(s.judged.objectsStdErr),
        oldestAgeMs: old ? Math.max(0, Number(nowNs - old.tsNs) / 1e6) : 0,
        frames: s.frames.map((r) => this.frameOf(r)),
        class: javaClassName(s.cls),
        survivedGcs,
        allocatedBytes: Math.round(s.allocated.bytes),
        allocatedObjects: Math.round(s.allocated.objects),
        allocatedBytesStdErr: Math.round(s.allocated.bytesStdErr),
        growthBytesPerSecond: Math.round(ev.slope),
        leakCandidate: ev.candidate,
        evidence: ev.evidence,
      };
      out.push(st);
    }
    out.sort((a, b) => b.bytes - a.bytes);
    return top > 0 ? out.slice(0, top) : out;
  }

  /** Every allocation site, most bytes first. */
  allocatedStacks(): JavaAllocStack[] {
    return [...this.sites.values()]
      .map((s) => ({
        class: javaClassName(s.cls),
        frames: s.frames.map((r) => this.frameOf(r)),
        bytes: Math.round(s.allocated.bytes),
        objects: Math.round(s.allocated.objects),
        bytesStdErr: Math.round(s.allocated.bytesStdErr),
        samples: s.allocated.samples,
      }))
      .sort((a, b) => b.bytes - a.bytes);
  }

  /** live = survived the last GC (see the G record) */
  totals(): { liveBytes: number; liveObjects: number; allocatedBytes: number } {
    let liveBytes = 0;
    let liveObjects = 0;
    let allocatedBytes = 0;
    for (const s of this.sites.values()) {
      liveBytes += s.judged.bytes;
      liveObjects += s.judged.objects;
      allocatedBytes += s.allocated.bytes;
    }
    return { liveBytes: Math.round(liveBytes), liveObjects: Math.round(liveObjects), allocatedBytes: Math.round(allocatedBytes) };
  }
}
