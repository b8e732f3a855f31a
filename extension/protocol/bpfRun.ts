// JSON shapes of the "bpf-run" tracer behind "Run BPF Program": a user's BPF object loaded,
// auto-attached by section name, and its maps sampled live. Values are decoded with the BTF the
// object carries, so they are plain JSON (numbers, strings, arrays, objects).

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface BpfRunOptions {
  /** absolute path of the .bpf.o */
  objectPath: string;
  /** the .bpf.c it was built from: @sample annotations and ring-buffer record types */
  sourcePath?: string;
  /** default sampling period; a map's own @sample interval wins */
  intervalMs: number;
  /** SHA-256 of the object the user confirmed loading as root (extension/editor/helperClient/objectConfirm.ts); the helper refuses without it */
  confirmedSha256?: string;
}

export interface ProgramState {
  name: string;
  section: string;
  attached: boolean;
  /** why it is not attached, e.g. "bare uprobe sections need a binary: write SEC(\"uprobe/PATH:FUNC\")" */
  reason?: string;
  /** how it is attached, e.g. "prog id 812, perf_event link" */
  detail?: string;
}

interface MapBase {
  name: string;
  /** libbpf's type name, e.g. "hash", "percpu_array", "ringbuf" */
  mapType: string;
  keyType?: string;
  valueType?: string;
}

export interface TableView extends MapBase {
  kind: 'table';
  rows: { key: Json; value: Json }[];
  /** entries in the map (rows may be fewer) */
  entries: number;
}

export interface HistogramSeries {
  /** the map key the series belongs to (null for a single histogram) */
  key: Json;
  /** e.g. "pid 1234 (java)" or "all" */
  label: string;
  /** bucket i counts values in [2^i, 2^(i+1)) (bucket 0: 0 and 1), as bcc's print_log2_hist reads them */
  counts: number[];
}

export interface HistogramView extends MapBase {
  kind: 'histogram';
  series: HistogramSeries[];
  /** from the @sample annotation, or how we recognised it */
  origin: 'annotation' | 'shape';
}

export interface RingbufView extends MapBase {
  kind: 'ringbuf';
  /** struct the records are decoded with, if known */
  recordType?: string;
  total: number;
  /** newest last, at most 100 */
  recent: Json[];
}

export interface OtherView extends MapBase {
  kind: 'other';
  reason: string;
}

export type MapView = TableView | HistogramView | RingbufView | OtherView;

export interface BpfRunUpdate {
  atMs: number;
  maps: MapView[];
}

export interface BpfRunResult {
  tracer: 'bpf-run';
  objectPath: string;
  programs: ProgramState[];
  maps: MapView[];
  durationMs: number;
}
