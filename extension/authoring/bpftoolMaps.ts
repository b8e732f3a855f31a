// Which BPF maps a process holds (from its /proc/PID/fdinfo "map_id:" lines: Debian's bpftool
// lists no owning pids), used by loaderMaps.ts, and the conversion of `bpftool map dump -j` output
// (BTF-formatted when the map has BTF) into table views, for dumps made outside a traced run (the
// helper reads a running loader's maps in-process instead: bpftool's execs would be traced). Pure.
import type { Json, MapView } from '../protocol/bpfRun';

const RINGBUF_TYPE = 27;
export const MAX_ROWS = 200;

/** map ids and types in the text of a process's fdinfo files (one entry per BPF map fd). */
export function mapIdsFromFdinfo(fdinfos: string[]): { id: number; type: number }[] {
  const out: { id: number; type: number }[] = [];
  for (const text of fdinfos) {
    const id = /^map_id:\s*(\d+)/m.exec(text);
    if (!id) continue;
    const type = /^map_type:\s*(\d+)/m.exec(text);
    if (!out.some((m) => m.id === Number(id[1]))) out.push({ id: Number(id[1]), type: type ? Number(type[1]) : -1 });
  }
  return out;
}

interface DumpEntry {
  key?: Json;
  value?: Json;
  formatted?: { key?: Json; value?: Json };
}

/** A map's view from `bpftool map show id N -j` and `bpftool map dump id N -j` output. */
export function mapViewFromDump(show: { name?: string; type?: string; id: number }, typeNumber: number, dump: unknown): MapView {
  const name = show.name ?? `map ${show.id}`;
  const mapType = show.type ?? String(typeNumber);
  if (typeNumber === RINGBUF_TYPE || mapType === 'ringbuf') return { kind: 'other', name, mapType, reason: 'a ring buffer: the loader consumes its records (see its output)' };
  if (!Array.isArray(dump)) return { kind: 'other', name, mapType, reason: 'bpftool could not dump it' };
  const entries = dump as DumpEntry[];
  const rows = entries.slice(0, MAX_ROWS).map((e) => {
    // Global variables (.bss/.data/.rodata) are one-entry arrays: show their variables, not key 0.
    const v = e.formatted?.value;
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const sec = Object.keys(v).find((k) => k.startsWith('.'));
      if (sec && Array.isArray((v as Record<string, Json>)[sec])) return { key: sec, value: Object.assign({}, ...((v as Record<string, Json[]>)[sec] as object[])) as Json };
    }
    return { key: e.formatted?.key ?? e.key ?? null, value: e.formatted?.value ?? e.value ?? null };
  });
  return { kind: 'table', name, mapType, rows, entries: entries.length };
}
