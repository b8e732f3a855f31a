// The maps of a running loader for the map view, read in the helper's own process through BPF
// syscalls (the addon's mapReadById/btfRawById): the map ids come from /proc/PID/fdinfo, keys
// and values are decoded with the BTF the kernel keeps for the map. No bpftool runs, so nothing
// is exec'd while the loader traces (bpftool's exec()s used to appear in exec-tracing programs'
// own events and counters). Reads only: the traced program's maps are never changed.
import fs from 'node:fs';
import path from 'node:path';
import type { Addon } from '../sys/addon';
import type { Json, MapView } from '../protocol/bpfRun';
import { Btf, sumJson } from './btfDecode';
import { mapIdsFromFdinfo, MAX_ROWS } from './bpftoolMaps';
import { rawBtfTypes } from './kernelBtf';

const MAP_TYPE_NAMES = [
  'unspec', 'hash', 'array', 'prog_array', 'perf_event_array', 'percpu_hash', 'percpu_array', 'stack_trace', 'cgroup_array', 'lru_hash',
  'lru_percpu_hash', 'lpm_trie', 'array_of_maps', 'hash_of_maps', 'devmap', 'sockmap', 'cpumap', 'xskmap', 'sockhash', 'cgroup_storage',
  'reuseport_sockarray', 'percpu_cgroup_storage', 'queue', 'stack', 'sk_storage', 'devmap_hash', 'struct_ops', 'ringbuf', 'inode_storage',
  'task_storage', 'bloom_filter', 'user_ringbuf', 'cgrp_storage', 'arena',
];

export function mapTypeName(type: number): string {
  return MAP_TYPE_NAMES[type] ?? String(type);
}

/** The fdinfo text of every fd of `pid` (empty strings for fds that closed meanwhile). */
export function fdinfos(pid: number): string[] {
  const dir = `/proc/${pid}/fdinfo`;
  let fds: string[];
  try {
    fds = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return fds.map((fd) => {
    try {
      return fs.readFileSync(path.join(dir, fd), 'utf8');
    } catch {
      return '';
    }
  });
}

type MapReader = Pick<Addon, 'mapReadById' | 'btfRawById'>;

/** Decoders by BTF id, kept for the run: a program's BTF does not change while it is loaded. */
export class LoaderMapReader {
  private readonly btfs = new Map<number, Btf | null>();

  constructor(private readonly addon: MapReader) {}

  private btf(id: number): Btf | undefined {
    if (!id) return undefined;
    if (!this.btfs.has(id)) {
      try {
        const raw = this.addon.btfRawById(id);
        this.btfs.set(id, raw ? new Btf(rawBtfTypes(raw)) : null);
      } catch {
        this.btfs.set(id, null);
      }
    }
    return this.btfs.get(id) ?? undefined;
  }

  /** One view per BPF map the process holds. */
  read(pid: number): MapView[] {
    const out: MapView[] = [];
    for (const { id } of mapIdsFromFdinfo(fdinfos(pid))) {
      let m: ReturnType<MapReader['mapReadById']>;
      try {
        m = this.addon.mapReadById(id, MAX_ROWS);
      } catch {
        continue; // freed since the fdinfo was read
      }
      const name = m.name || `map ${m.id}`;
      const mapType = mapTypeName(m.type);
      if (m.type === 27) {
        out.push({ kind: 'other', name, mapType, reason: 'a ring buffer: the loader consumes its records (see its output)' });
        continue;
      }
      if (!m.readable) {
        out.push({ kind: 'other', name, mapType, reason: `a ${mapType} map: it holds no values to show` });
        continue;
      }
      const btf = this.btf(m.btfId);
      const keyType = btf && m.btfKeyTypeId ? btf.typeName(m.btfKeyTypeId) : undefined;
      const valueType = btf && m.btfValueTypeId ? btf.typeName(m.btfValueTypeId) : undefined;
      const datasec = btf && m.btfValueTypeId ? btf.resolve(m.btfValueTypeId) : undefined;
      const decodeValue = (buf: Buffer): Json => {
        if (!btf || !m.btfValueTypeId) return buf.subarray(0, m.valueSize).toString('hex');
        if (datasec?.kind === 'DATASEC') {
          // Global variables (.bss/.data/.rodata): one entry holding every variable of the section.
          const vars: { [k: string]: Json } = {};
          for (const v of datasec.vars ?? []) {
            const variable = btf.get(v.type_id);
            if (variable) vars[variable.name] = btf.decode(variable.type_id ?? 0, buf, v.offset);
          }
          return vars;
        }
        if (!m.perCpu) return btf.decode(m.btfValueTypeId, buf);
        const stride = Math.ceil(m.valueSize / 8) * 8;
        let sum: Json = null;
        for (let off = 0; off + m.valueSize <= buf.length; off += stride) {
          const v = btf.decode(m.btfValueTypeId, buf, off);
          sum = sum === null ? v : sumJson(sum, v);
        }
        return sum;
      };
      const rows: { key: Json; value: Json }[] = [];
      for (let i = 0; i < m.count; i++) {
        const k = m.keys.subarray(i * m.keySize, (i + 1) * m.keySize);
        const v = m.values.subarray(i * m.valueBytes, (i + 1) * m.valueBytes);
        const key = datasec?.kind === 'DATASEC' ? datasec.name : btf && m.btfKeyTypeId ? btf.decode(m.btfKeyTypeId, k) : k.length <= 6 ? k.readUIntLE(0, k.length) : k.toString('hex');
        rows.push({ key, value: decodeValue(v) });
      }
      out.push({ kind: 'table', name, mapType, keyType, valueType, rows, entries: m.count });
    }
    return out;
  }
}
