// Parses the maps bpftrace prints when it exits ("@name: 42", "@name[key]: 7", and hist()/lhist()
// blocks) into the map view's shapes (extension/protocol/bpfRun.ts), so "Run bpftrace Script"
// shows them in the same view as "Run BPF Program". Pure and hand-written: bpftrace has no
// machine-readable exit dump we can rely on here (its -f json mode changes the script's own
// printf output too), and no library parses its text format.
import type { HistogramView, Json, MapView, TableView } from '../protocol/bpfRun';

const SUFFIX: Record<string, number> = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40, P: 2 ** 50, E: 2 ** 60 };

/** "16K" → 16384; undefined when it is not a bpftrace bucket bound. */
export function parseBound(s: string): number | undefined {
  const m = /^(-?\d+)([KMGTPE]?)$/.exec(s.trim());
  return m ? Number(m[1]) * SUFFIX[m[2]] : undefined;
}

interface Bucket {
  label: string;
  /** undefined for the negative bucket "(..., 0)" */
  lo?: number;
  hi?: number;
  count: number;
}

const HEADER = /^(@\w*)(?:\[(.*)\])?:\s*$/;
const SCALAR = /^(@\w*)(?:\[(.*)\])?:\s+(.+?)\s*$/;
const BUCKET = /^(\(\.\.\., 0\)|\[([^\],)]+)(?:,\s*([^\])]+))?[\])])\s+(\d+)\s*\|/;

function keyJson(key: string | undefined): Json {
  if (key === undefined) return null;
  const n = Number(key);
  return key.trim() !== '' && Number.isFinite(n) ? n : key;
}

/** bcc-style log2 counts (bucket 0: 0 and 1; bucket i: [2^i, 2^(i+1))) when every bucket is one; else undefined (lhist). */
export function log2Counts(buckets: Bucket[]): { counts: number[]; negative: number } | undefined {
  const counts: number[] = [];
  let negative = 0;
  for (const b of buckets) {
    if (b.lo === undefined) {
      negative += b.count;
      continue;
    }
    let i: number;
    if (b.hi === undefined && (b.lo === 0 || b.lo === 1)) i = 0;
    else if (b.hi !== undefined && b.lo >= 2 && b.hi === b.lo * 2 && Number.isInteger(Math.log2(b.lo))) i = Math.log2(b.lo);
    else return undefined;
    while (counts.length <= i) counts.push(0);
    counts[i] += b.count;
  }
  return { counts, negative };
}

/**
 * Every @map in bpftrace's output, in the order first printed, with the values of its last
 * printing: a map printed more than once (print(@m) in an interval probe, then bpftrace's exit
 * dump) shows each key once, as the final dump has it. A printing ends at the first line that is
 * neither blank nor part of that map (the script's printf output); within one, a repeated key
 * keeps its last value. Other lines are skipped.
 */
export function parseBpftraceMaps(text: string): MapView[] {
  const hists = new Map<string, { series: { key: Json; label: string; buckets: Bucket[] }[] }>();
  const tables = new Map<string, TableView>();
  const order: string[] = [];
  const seen = (name: string) => {
    if (!order.includes(name)) order.push(name);
  };
  /** the map whose printing the previous non-blank line belonged to */
  let current: string | undefined;
  const startPrinting = (name: string) => {
    if (current === name) return;
    current = name;
    hists.delete(name);
    tables.delete(name);
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, '');
    const head = HEADER.exec(line);
    if (head && BUCKET.test(lines[i + 1] ?? '')) {
      const [, name, key] = head;
      startPrinting(name);
      const buckets: Bucket[] = [];
      for (let m = BUCKET.exec(lines[i + 1] ?? ''); m; m = BUCKET.exec(lines[i + 1] ?? '')) {
        i++;
        const count = Number(m[4]);
        if (m[1].startsWith('(')) buckets.push({ label: m[1], count });
        else buckets.push({ label: m[1], lo: parseBound(m[2]), hi: m[3] === undefined ? undefined : parseBound(m[3]), count });
      }
      const h = hists.get(name) ?? { series: [] };
      const label = key ?? 'all';
      h.series = h.series.filter((x) => x.label !== label);
      h.series.push({ key: keyJson(key), label, buckets });
      hists.set(name, h);
      seen(name);
      continue;
    }
    const s = SCALAR.exec(line);
    if (s) {
      const [, name, key, value] = s;
      startPrinting(name);
      const t = tables.get(name) ?? { kind: 'table' as const, name, mapType: 'bpftrace', rows: [], entries: 0 };
      const n = Number(value);
      const k = keyJson(key);
      t.rows = t.rows.filter((r) => r.key !== k);
      t.rows.push({ key: k, value: /^-?\d+$/.test(value) && Number.isSafeInteger(n) ? n : value });
      t.entries = t.rows.length;
      tables.set(name, t);
      seen(name);
      continue;
    }
    if (line.trim() !== '') current = undefined;
  }
  const out: MapView[] = [];
  for (const name of order) {
    const h = hists.get(name);
    if (h) {
      const log2 = h.series.map((s) => log2Counts(s.buckets));
      if (log2.every((l) => l !== undefined)) {
        const view: HistogramView = {
          kind: 'histogram',
          name,
          mapType: 'bpftrace hist()',
          origin: 'shape',
          series: h.series.map((s, j) => ({ key: s.key, label: s.label, counts: log2[j]!.counts })),
        };
        out.push(view);
      } else {
        // lhist(): linear buckets do not fit the log2 view; one row per bucket keeps every count.
        out.push({
          kind: 'table',
          name,
          mapType: 'bpftrace lhist()',
          rows: h.series.flatMap((s) => s.buckets.map((b) => ({ key: s.key === null ? b.label : `${s.label} ${b.label}`, value: b.count }))),
          entries: h.series.reduce((n, s) => n + s.buckets.length, 0),
        });
      }
    }
    const t = tables.get(name);
    if (t) out.push(t);
  }
  return out;
}
