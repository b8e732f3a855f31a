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
import { histogramOf, sumJson, type MapTypes } from '../../authoring/btfDecode';
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
      return await startRun(options, user.path, env, events);
    } finally {
      user.dispose();
    }
  },
};

async function startRun(options: BpfRunOptions, objectFile: string, env: TracerEnv, events: SessionEvents<'bpf-run'>): Promise<Session<'bpf-run'>> {
  {
    checkBpfObject(objectFile);
    // no source (or an unusable one: not regular, over 4 MiB): no annotations
    const source = options.sourcePath ? readSourceOnce(options.sourcePath) : '';
    const decls = new Map(mapDeclarations(source).map((d) => [d.name, d]));
    const recordTypes = ringbufRecordTypes(source);
    const warnings: string[] = [];
    const { btf, problem } = readObjectBtf(objectFile);
    if (problem) warnings.push(problem);
    const mapTypes = btf?.mapTypes() ?? new Map<string, MapTypes>();

    let obj: BpfObject;
    try {
      obj = new env.addon.BpfObject(objectFile);
    } catch (e) {
      throw new StudioError('input', `libbpf cannot open ${options.objectPath}: ${(e as Error).message}`);
    }
    const programs: ProgramState[] = obj.programs().filter((p) => p.autoload).map((p) => ({ name: p.name, section: p.section, attached: false }));
    try {
      obj.load();
    } catch (e) {
      obj.close();
      const err = e as { code?: string; log?: string };
      if (err.code === 'EPERM') throw fromBpfError(`loading ${options.objectPath}`, e);
      const d = verifierDiagnostics(err.log ?? '')[0];
      throw new StudioError('input', `the kernel rejected ${path.basename(options.objectPath)}${d ? ` at ${d.file}:${d.line}: ${d.message}` : `: ${(e as Error).message}`}. Run "eBPF: Load and Verify" for the details on the source line.`, err.log);
    }
    if (programs.some((p) => /^(tracepoint|tp)\//.test(p.section))) ensureTracefs();
    for (const p of programs) {
      p.reason = attachProblem(p.section);
      if (p.reason) continue;
      try {
        obj.attach(p.name);
        p.attached = true;
      } catch (e) {
        p.reason = `attach failed: ${(e as Error).message}`;
      }
    }
    if (!programs.some((p) => p.attached)) {
      obj.close();
      throw new StudioError('unsuitable', `no program could be attached: ${programs.map((p) => `${p.name} (${p.reason})`).join('; ') || 'the object has no programs'}`);
    }
    for (const p of programs) if (!p.attached) warnings.push(`${p.name}: ${p.reason}`);

    const ncpus = env.addon.numPossibleCpus();
    const ringbufs: { close(): void }[] = [];
    const states: MapState[] = [];
    const typeName = (id?: number) => (btf && id !== undefined ? btf.typeName(id) : undefined);
    for (const info of obj.maps()) {
      if (info.name.includes('.')) continue; // .rodata/.bss/.data of the object itself
      const types = mapTypes.get(info.name) ?? {};
      const decl = decls.get(info.name);
      const base = { name: info.name, mapType: info.typeName, keyType: typeName(types.keyTypeId), valueType: typeName(types.valueTypeId) };
      const st: MapState = { info, types, decl, intervalMs: Number(decl?.sample?.interval) >= 100 ? Number(decl!.sample!.interval) : options.intervalMs, lastAt: 0, view: { ...base, kind: 'other', reason: '' } };
      if (info.typeName === 'ringbuf') {
        const recordStruct = recordTypes.get(info.name);
        const view = { ...base, kind: 'ringbuf' as const, recordType: recordStruct ? `struct ${recordStruct}` : undefined, total: 0, recent: [] as Json[] };
        st.view = view;
        const candidates = btf ? (recordStruct ? btf.structsNamed(recordStruct) : []) : [];
        if (btf && recordStruct && candidates.length === 0) {
          // clang emits BTF only for types that globals, maps and function signatures use.
          warnings.push(
            `${info.name}: struct ${recordStruct} is not in the object's BTF (types used only by local variables are left out), so records are shown as hex. Declare a global such as "const struct ${recordStruct} *${recordStruct}_btf __attribute__((unused));" to decode them.`,
          );
        }
        ringbufs.push(
          obj.openRingBuffer(info.name, (batch, offsets) => {
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
      } else if (UNSAMPLED.has(info.typeName)) {
        st.view = { ...base, kind: 'other', reason: `${info.typeName} maps are not sampled` };
      }
      states.push(st);
    }

    const decodeKey = (st: MapState, buf: Buffer): Json => (btf && st.types.keyTypeId !== undefined ? btf.decode(st.types.keyTypeId, buf) : buf.readUIntLE(0, Math.min(6, buf.length)));
    const decodeValue = (st: MapState, buf: Buffer): Json => {
      if (!btf || st.types.valueTypeId === undefined) return buf.length <= 6 ? buf.readUIntLE(0, buf.length) : buf.toString('hex');
      if (!st.info.perCpu) return btf.decode(st.types.valueTypeId, buf);
      const stride = Math.ceil(st.info.valueSize / 8) * 8;
      let sum: Json = null;
      for (let c = 0; c < ncpus; c++) {
        const v = btf.decode(st.types.valueTypeId, buf, c * stride);
        sum = c === 0 ? v : sumJson(sum, v);
      }
      return sum;
    };

    const sample = (st: MapState) => {
      if (st.view.kind === 'ringbuf' || (st.view.kind === 'other' && st.view.reason)) return;
      const dump = obj.mapDump(st.info.name);
      const vstride = st.info.perCpu ? Math.ceil(st.info.valueSize / 8) * 8 * ncpus : st.info.valueSize;
      const rows: { key: Json; value: Json }[] = [];
      for (let i = 0; i < dump.count; i++) {
        rows.push({ key: decodeKey(st, dump.keys.subarray(i * st.info.keySize, (i + 1) * st.info.keySize)), value: decodeValue(st, dump.values.subarray(i * vstride, (i + 1) * vstride)) });
      }
      const base = { name: st.info.name, mapType: st.info.typeName, keyType: typeName(st.types.keyTypeId), valueType: typeName(st.types.valueTypeId) };
      const origin = isHistogramCandidate(st.decl, st.info.name);
      if (origin) {
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
        if (series.length || origin === 'annotation') {
          series.sort((a, b) => b.counts.reduce((x, y) => x + y, 0) - a.counts.reduce((x, y) => x + y, 0));
          st.view = { ...base, kind: 'histogram', series: series.slice(0, 64), origin };
          return;
        }
      }
      st.view = { ...base, kind: 'table', rows: rows.slice(0, MAX_ROWS), entries: rows.length };
    };

    const sampleAll = (force: boolean) => {
      const now = Date.now();
      for (const st of states) {
        if (!force && now - st.lastAt < st.intervalMs - 50) continue;
        st.lastAt = now;
        try {
          sample(st);
        } catch (e) {
          st.view = { name: st.info.name, mapType: st.info.typeName, kind: 'other', reason: `reading failed: ${(e as Error).message}` };
        }
      }
    };
    const startedAt = Date.now();
    const tick = Math.max(100, Math.min(options.intervalMs, ...states.map((s) => s.intervalMs)));
    const timer = setInterval(() => {
      sampleAll(false);
      events.update({ atMs: Date.now() - startedAt, maps: states.map((s) => s.view) });
    }, tick);
    sampleAll(true);

    let closed = false;
    const result = (): BpfRunResult => ({ tracer: 'bpf-run', objectPath: options.objectPath, programs, maps: states.map((s) => s.view), durationMs: Date.now() - startedAt });
    return {
      targets: [],
      warnings,
      snapshot: () => {
        sampleAll(true);
        return result();
      },
      async stop() {
        if (!closed) {
          closed = true;
          clearInterval(timer);
          sampleAll(true);
          for (const rb of ringbufs) rb.close();
          obj.close();
        }
        return result();
      },
    };
  }
}
