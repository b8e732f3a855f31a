// The "bpf-run" tracer behind "Run BPF Program": loads a user's object, attaches every program
// libbpf can attach from its section name alone, and samples every map on a timer (the
// @sample interval of a map wins), decoding keys and values with the object's BTF. Ring buffers
// stream their records, decoded with the struct the source reserves/outputs.
import path from 'node:path';
import type { BpfObject, MapInfo } from '../../../native/index';
import type { BpfRunOptions, BpfRunResult, HistogramSeries, Json, MapView, ProgramState } from '../../protocol/bpfRun';
import { asObject, int, str } from '../../protocol/validate';
import { fromBpfError, inputError, StudioError } from '../../protocol/errors';
import { ensureTracefs } from '../../sys/tracefs';
import { checkBpfObject } from '../../authoring/toolchain';
import { histogramOf, sumJson, type Btf, type MapTypes } from '../../authoring/btfDecode';
import { readObjectBtf } from '../../authoring/objectBtf';
import { mapDeclarations, ringbufRecordTypes, type MapDecl } from '../../authoring/sourceFacts';
import { verifierDiagnostics } from '../../authoring/verifierLog';
import { matchSection } from '../../authoring/sections';
import type { Session, SessionEvents, Tracer, TracerEnv } from '../tracer';
import { openUserObject, readSourceOnce } from '../../sys/userObject';
import { records } from '../bpfObject';

const MAX_ROWS = 500;
const MAX_RECENT = 100;
const UNSAMPLED = new Set(['prog_array', 'perf_event_array', 'stack_trace', 'cgroup_array', 'array_of_maps', 'hash_of_maps', 'devmap', 'devmap_hash', 'sockmap', 'sockhash', 'cpumap', 'xskmap', 'reuseport_sockarray', 'struct_ops', 'user_ringbuf', 'queue', 'stack', 'bloom_filter', 'sk_storage', 'inode_storage', 'task_storage', 'cgrp_storage', 'arena']);

/** Why libbpf cannot attach a section by itself, or undefined if it can. */
export function attachProblem(section: string): string | undefined {
  const def = matchSection(section);
  if (!def) return `SEC("${section}") is not a section libbpf knows`;
  if (!def.autoAttach) return `SEC("${section}") programs are not attached by section name`;
  if (def.extras && section === def.name) {
    if (['uprobe', 'uretprobe', 'uprobe.s', 'uretprobe.s'].includes(def.name)) return `a bare SEC("${section}") names no binary: write SEC("${def.name}/PATH:FUNCTION") to run it here`;
    if (def.name === 'usdt') return 'a bare SEC("usdt") names no binary: write SEC("usdt/PATH:PROVIDER:NAME") to run it here';
    return `SEC("${section}") names no target: write SEC("${def.name}/${def.suffix}")`;
  }
  return undefined;
}

function isHistogramCandidate(decl: MapDecl | undefined, name: string): 'annotation' | 'shape' | undefined {
  if (decl?.sample?.type === 'log2_hist') return 'annotation';
  if (decl?.sample?.type && decl.sample.type !== 'log2_hist') return undefined;
  return /hist/i.test(name) ? 'shape' : undefined;
}

interface MapState {
  info: MapInfo;
  types: MapTypes;
  decl?: MapDecl;
  intervalMs: number;
  lastAt: number;
  view: MapView;
}

export const bpfRunTracer: Tracer<'bpf-run'> = {
  name: 'bpf-run',
  validate(raw): BpfRunOptions {
    const o = asObject(raw, 'options');
    const objectPath = str(o, 'objectPath');
    if (!path.isAbsolute(objectPath)) throw inputError(`objectPath must be absolute, got "${objectPath}"`);
    const sourcePath = o.sourcePath === undefined ? undefined : str(o, 'sourcePath');
    if (sourcePath !== undefined && !path.isAbsolute(sourcePath)) throw inputError(`sourcePath must be absolute, got "${sourcePath}"`);
    const confirmedSha256 = o.confirmedSha256 === undefined ? undefined : str(o, 'confirmedSha256', 64);
    return { objectPath, sourcePath, intervalMs: int(o, 'intervalMs', 100, 60000, 1000), confirmedSha256 };
  },

  async start(options, env, events) {
    // Confirmed, regular, BPF ELF, read once: libbpf gets a private copy of those bytes (helper/userObject.ts).
    const user = openUserObject(options.objectPath, options.confirmedSha256);
    try {
      checkBpfObject(user.path);
      const session = new BpfRunSession(options, env, events);
      session.attach(user.path);
      session.collect();
      return session;
    } finally {
      user.dispose();
    }
  },
};

/** The user's own object, loaded and attached: its maps sampled (decoded by BTF), its ring buffers' recent records kept. */
class BpfRunSession implements Session<'bpf-run'> {
  readonly targets: number[] = [];
  readonly warnings: string[] = [];
  private obj!: BpfObject;
  private btf?: Btf;
  private mapTypes = new Map<string, MapTypes>();
  private programs: ProgramState[] = [];
  private readonly ringbufs: { close(): void }[] = [];
  private readonly states: MapState[] = [];
  private readonly ncpus: number;
  private startedAt = 0;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly options: BpfRunOptions,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'bpf-run'>,
  ) {
    this.ncpus = env.addon.numPossibleCpus();
  }

  /** Opens, loads and attaches every program libbpf can attach by its section; then opens its maps. */
  attach(objectFile: string): void {
    const { options } = this;
    // no source (or an unusable one: not regular, over 4 MiB): no annotations
    const source = options.sourcePath ? readSourceOnce(options.sourcePath) : '';
    const { btf, problem } = readObjectBtf(objectFile);
    if (problem) this.warnings.push(problem);
    this.btf = btf;
    this.mapTypes = btf?.mapTypes() ?? new Map<string, MapTypes>();
    try {
      this.obj = new this.env.addon.BpfObject(objectFile);
    } catch (e) {
      throw new StudioError('input', `libbpf cannot open ${options.objectPath}: ${(e as Error).message}`);
    }
    this.programs = this.obj.programs().filter((p) => p.autoload).map((p) => ({ name: p.name, section: p.section, attached: false }));
    this.load();
    this.attachPrograms();
    this.openMaps(source);
  }

  private load(): void {
    try {
      this.obj.load();
    } catch (e) {
      this.obj.close();
      const err = e as { code?: string; log?: string };
      if (err.code === 'EPERM') throw fromBpfError(`loading ${this.options.objectPath}`, e);
      const d = verifierDiagnostics(err.log ?? '')[0];
      throw new StudioError('input', `the kernel rejected ${path.basename(this.options.objectPath)}${d ? ` at ${d.file}:${d.line}: ${d.message}` : `: ${(e as Error).message}`}. Run "eBPF: Load and Verify" for the details on the source line.`, err.log);
    }
  }

  private attachPrograms(): void {
    const programs = this.programs;
    if (programs.some((p) => /^(tracepoint|tp)\//.test(p.section))) ensureTracefs();
    for (const p of programs) {
      p.reason = attachProblem(p.section);
      if (p.reason) continue;
      try {
        this.obj.attach(p.name);
        p.attached = true;
      } catch (e) {
        p.reason = `attach failed: ${(e as Error).message}`;
      }
    }
    if (!programs.some((p) => p.attached)) {
      this.obj.close();
      throw new StudioError('unsuitable', `no program could be attached: ${programs.map((p) => `${p.name} (${p.reason})`).join('; ') || 'the object has no programs'}`);
    }
    for (const p of programs) if (!p.attached) this.warnings.push(`${p.name}: ${p.reason}`);
  }

  private typeName(id?: number): string | undefined {
    return this.btf && id !== undefined ? this.btf.typeName(id) : undefined;
  }

  private openMaps(source: string): void {
    const decls = new Map(mapDeclarations(source).map((d) => [d.name, d]));
    const recordTypes = ringbufRecordTypes(source);
    for (const info of this.obj.maps()) {
      if (info.name.includes('.')) continue; // .rodata/.bss/.data of the object itself
      const types = this.mapTypes.get(info.name) ?? {};
      const decl = decls.get(info.name);
      const base = { name: info.name, mapType: info.typeName, keyType: this.typeName(types.keyTypeId), valueType: this.typeName(types.valueTypeId) };
      const st: MapState = { info, types, decl, intervalMs: Number(decl?.sample?.interval) >= 100 ? Number(decl!.sample!.interval) : this.options.intervalMs, lastAt: 0, view: { ...base, kind: 'other', reason: '' } };
      if (info.typeName === 'ringbuf') this.openRingbuf(st, base, recordTypes.get(info.name));
      else if (UNSAMPLED.has(info.typeName)) st.view = { ...base, kind: 'other', reason: `${info.typeName} maps are not sampled` };
      this.states.push(st);
    }
  }

  /** A ring buffer's records, decoded by the struct its source names (or the one struct of their size). */
  private openRingbuf(st: MapState, base: { name: string; mapType: string; keyType?: string; valueType?: string }, recordStruct: string | undefined): void {
    const btf = this.btf;
    const info = st.info;
    const view = { ...base, kind: 'ringbuf' as const, recordType: recordStruct ? `struct ${recordStruct}` : undefined, total: 0, recent: [] as Json[] };
    st.view = view;
    const candidates = btf ? (recordStruct ? btf.structsNamed(recordStruct) : []) : [];
    if (btf && recordStruct && candidates.length === 0) {
      // clang emits BTF only for types that globals, maps and function signatures use.
      this.warnings.push(
        `${info.name}: struct ${recordStruct} is not in the object's BTF (types used only by local variables are left out), so records are shown as hex. Declare a global such as "const struct ${recordStruct} *${recordStruct}_btf __attribute__((unused));" to decode them.`,
      );
    }
    this.ringbufs.push(
      this.obj.openRingBuffer(info.name, (batch, offsets) => {
        for (const r of records(batch, offsets)) {
          view.total++;
          let rt = candidates[0];
          if (!rt && btf) {
            const bySize = btf.structsOfSize(r.length);
            if (bySize.length === 1) {
              rt = bySize[0];
              candidates.push(rt);
              view.recordType = `struct ${rt.name}`;
            }
          }
          view.recent.push(rt && btf ? btf.decode(rt.id, r) : r.toString('hex'));
          if (view.recent.length > MAX_RECENT) view.recent.shift();
        }
      }),
    );
  }

  private decodeKey(st: MapState, buf: Buffer): Json {
    return this.btf && st.types.keyTypeId !== undefined ? this.btf.decode(st.types.keyTypeId, buf) : buf.readUIntLE(0, Math.min(6, buf.length));
  }

  private decodeValue(st: MapState, buf: Buffer): Json {
    const btf = this.btf;
    if (!btf || st.types.valueTypeId === undefined) return buf.length <= 6 ? buf.readUIntLE(0, buf.length) : buf.toString('hex');
    if (!st.info.perCpu) return btf.decode(st.types.valueTypeId, buf);
    const stride = Math.ceil(st.info.valueSize / 8) * 8;
    let sum: Json = null;
    for (let c = 0; c < this.ncpus; c++) {
      const v = btf.decode(st.types.valueTypeId, buf, c * stride);
      sum = c === 0 ? v : sumJson(sum, v);
    }
    return sum;
  }

  private sample(st: MapState): void {
    if (st.view.kind === 'ringbuf' || (st.view.kind === 'other' && st.view.reason)) return;
    const dump = this.obj.mapDump(st.info.name);
    const vstride = st.info.perCpu ? Math.ceil(st.info.valueSize / 8) * 8 * this.ncpus : st.info.valueSize;
    const rows: { key: Json; value: Json }[] = [];
    for (let i = 0; i < dump.count; i++) {
      rows.push({ key: this.decodeKey(st, dump.keys.subarray(i * st.info.keySize, (i + 1) * st.info.keySize)), value: this.decodeValue(st, dump.values.subarray(i * vstride, (i + 1) * vstride)) });
    }
    const base = { name: st.info.name, mapType: st.info.typeName, keyType: this.typeName(st.types.keyTypeId), valueType: this.typeName(st.types.valueTypeId) };
    const origin = isHistogramCandidate(st.decl, st.info.name);
    const series = origin ? histogramSeries(rows) : [];
    if (origin && (series.length || origin === 'annotation')) {
      series.sort((a, b) => b.counts.reduce((x, y) => x + y, 0) - a.counts.reduce((x, y) => x + y, 0));
      st.view = { ...base, kind: 'histogram', series: series.slice(0, 64), origin };
      return;
    }
    st.view = { ...base, kind: 'table', rows: rows.slice(0, MAX_ROWS), entries: rows.length };
  }

  private sampleAll(force: boolean): void {
    const now = Date.now();
    for (const st of this.states) {
      if (!force && now - st.lastAt < st.intervalMs - 50) continue;
      st.lastAt = now;
      try {
        this.sample(st);
      } catch (e) {
        st.view = { name: st.info.name, mapType: st.info.typeName, kind: 'other', reason: `reading failed: ${(e as Error).message}` };
      }
    }
  }

  /** Samples every map at its interval (the source's annotation, or the session's) and sends them. */
  collect(): void {
    this.startedAt = Date.now();
    const tick = Math.max(100, Math.min(this.options.intervalMs, ...this.states.map((s) => s.intervalMs)));
    this.timer = setInterval(() => {
      this.sampleAll(false);
      this.events.update({ atMs: Date.now() - this.startedAt, maps: this.states.map((s) => s.view) });
    }, tick);
    this.sampleAll(true);
  }

  private result(): BpfRunResult {
    return { tracer: 'bpf-run', objectPath: this.options.objectPath, programs: this.programs, maps: this.states.map((s) => s.view), durationMs: Date.now() - this.startedAt };
  }

  snapshot(): BpfRunResult {
    this.sampleAll(true);
    return this.result();
  }

  async stop(): Promise<BpfRunResult> {
    if (!this.closed) {
      this.closed = true;
      clearInterval(this.timer);
      this.sampleAll(true);
      for (const rb of this.ringbufs) rb.close();
      this.obj.close();
    }
    return this.result();
  }
}

/** The histograms among a map's rows: values shaped as one, or an array of counters indexed by bucket. */
function histogramSeries(rows: { key: Json; value: Json }[]): HistogramSeries[] {
  const series: HistogramSeries[] = [];
  for (const r of rows) {
    const h = histogramOf(r.value);
    if (h) series.push({ key: r.key, label: h.label ?? (rows.length === 1 ? 'all' : `key ${JSON.stringify(r.key)}`), counts: h.counts });
  }
  // An array of plain counters indexed by bucket (key = slot) is one histogram too.
  if (series.length === 0 && rows.length > 1 && rows.every((r) => typeof r.value === 'number' && typeof r.key === 'number')) {
    const counts: number[] = [];
    for (const r of rows) counts[r.key as number] = r.value as number;
    for (let i = 0; i < counts.length; i++) counts[i] ??= 0;
    series.push({ key: null, label: 'all', counts });
  }
  return series;
}
