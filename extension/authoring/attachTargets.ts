// What SEC("...") can attach to on this kernel: kernel functions (kprobe: /proc/kallsyms text
// symbols; fentry/fexit: functions the kernel's BTF describes), tracepoints by category (tracefs
// events/, when readable), raw tracepoints (BTF "btf_trace_X" typedefs) and the USDT probes of a
// binary (its .note.stapsdt, for "usdt/PATH:provider:name"). Used by the language
// server to complete attach targets and to warn about one this kernel does not have. The check
// and completion are pure over an AttachTargets; loadAttachTargets reads the machine.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findJdks, usdtNotes } from '../sys/proc/processes';
import { loadKernelBtf, type KernelBtf } from './kernelBtf';
import { editDistance } from './sections';

export interface AttachTargets {
  /** kernel release the lists describe, for messages */
  release: string;
  /** kallsyms text symbols (kprobe targets); undefined when unreadable */
  kprobeFunctions?: Set<string>;
  /** BTF functions (fentry/fexit/fmod_ret targets) */
  btfFunctions?: Set<string>;
  /** category → event names; undefined when tracefs is not readable */
  tracepoints?: Map<string, Set<string>>;
  /** raw tracepoint names (raw_tp, tp_btf) */
  rawTracepoints?: Set<string>;
  /** binaries and their USDT probes; undefined when not looked up */
  usdt?: UsdtSource;
}

export interface UsdtSource {
  /** absolute paths of binaries with USDT notes worth offering after "usdt/" */
  suggested(): string[];
  /** "provider:name" of each probe of a binary, or why it has none */
  probes(file: string): { probes: string[] } | { problem: string };
  /** entries of a folder for completing a typed path: sub-folders and files with USDT notes */
  list(dir: string, prefix: string): { entries: { name: string; dir: boolean }[]; incomplete: boolean };
}

type TargetKind = 'kprobe' | 'btf-function' | 'tracepoint' | 'raw-tracepoint' | 'usdt';

const KIND_OF: Record<string, TargetKind> = {
  kprobe: 'kprobe',
  kretprobe: 'kprobe',
  fentry: 'btf-function',
  fexit: 'btf-function',
  fmod_ret: 'btf-function',
  'fentry.s': 'btf-function',
  'fexit.s': 'btf-function',
  'fmod_ret.s': 'btf-function',
  tracepoint: 'tracepoint',
  tp: 'tracepoint',
  raw_tracepoint: 'raw-tracepoint',
  raw_tp: 'raw-tracepoint',
  'raw_tracepoint.w': 'raw-tracepoint',
  'raw_tp.w': 'raw-tracepoint',
  tp_btf: 'raw-tracepoint',
  usdt: 'usdt',
  'usdt.s': 'usdt',
};

/** "kprobe/do_unlinkat+4" → { prefix: "kprobe", kind, target: "do_unlinkat+4" }; undefined for other sections. */
export function splitAttachSection(sec: string): { prefix: string; kind: TargetKind; target: string } | undefined {
  const slash = sec.indexOf('/');
  if (slash < 0) return undefined;
  const prefix = sec.slice(0, slash);
  const kind = KIND_OF[prefix];
  return kind ? { prefix, kind, target: sec.slice(slash + 1) } : undefined;
}

function closest(name: string, names: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const n of names) {
    if (Math.abs(n.length - name.length) > 2) continue;
    const d = editDistance(name, n);
    if (d < bestD) {
      bestD = d;
      best = n;
    }
  }
  return bestD <= 2 ? best : undefined;
}

/** A warning when the section's attach target does not exist on this kernel; undefined when it exists or cannot be told. */
export function checkAttachTarget(sec: string, t: AttachTargets): string | undefined {
  const s = splitAttachSection(sec);
  if (!s || !s.target) return undefined;
  const on = `on this kernel (${t.release})`;
  const hint = (m: string | undefined, form: (x: string) => string) => (m ? ` Did you mean "${form(m)}"?` : '');
  if (s.kind === 'kprobe' || s.kind === 'btf-function') {
    const fn = s.target.replace(/\+\d+$|\+0x[0-9a-f]+$/i, '');
    const set = s.kind === 'kprobe' ? t.kprobeFunctions ?? t.btfFunctions : t.btfFunctions;
    if (!set || set.has(fn) || /[*?]/.test(fn)) return undefined;
    const what = s.kind === 'kprobe' ? 'no kernel function' : 'no kernel function with BTF';
    return `SEC("${sec}"): ${what} "${fn}" ${on}, so attaching fails with ENOENT.${hint(closest(fn, set), (x) => `${s.prefix}/${x}`)}`;
  }
  if (s.kind === 'tracepoint') {
    const [cat, name] = s.target.split('/');
    if (!t.tracepoints || !cat || !name) return undefined;
    const names = t.tracepoints.get(cat);
    if (!names) return `SEC("${sec}"): no tracepoint category "${cat}" ${on}.${hint(closest(cat, t.tracepoints.keys()), (x) => `${s.prefix}/${x}/${name}`)}`;
    if (names.has(name)) return undefined;
    return `SEC("${sec}"): no tracepoint "${name}" in category "${cat}" ${on}.${hint(closest(name, names), (x) => `${s.prefix}/${cat}/${x}`)}`;
  }
  if (s.kind === 'usdt') return checkUsdt(sec, s.target, t.usdt);
  if (!t.rawTracepoints || t.rawTracepoints.has(s.target)) return undefined;
  return `SEC("${sec}"): no raw tracepoint "${s.target}" ${on}.${hint(closest(s.target, t.rawTracepoints), (x) => `${s.prefix}/${x}`)}`;
}

/**
 * libbpf's "usdt/PATH:provider:name" checked against the binary's notes. Only absolute paths are
 * checked: libbpf looks a relative one up at load time (PATH, LD_LIBRARY_PATH, the working folder).
 */
function checkUsdt(sec: string, target: string, usdt: UsdtSource | undefined): string | undefined {
  const parts = target.split(':');
  if (!usdt || parts.length !== 3 || !parts[0].startsWith('/') || !parts[1] || !parts[2]) return undefined;
  const found = usdt.probes(parts[0]);
  if ('problem' in found) return `SEC("${sec}"): ${found.problem}, so attaching the USDT probe fails.`;
  const probe = `${parts[1]}:${parts[2]}`;
  if (found.probes.includes(probe)) return undefined;
  const near = closest(probe, found.probes);
  return `SEC("${sec}"): no USDT probe "${probe}" in ${parts[0]} (it has ${new Set(found.probes).size} probes; complete after "${parts[0]}:" to see them).${near ? ` Did you mean "usdt/${parts[0]}:${near}"?` : ''}`;
}

export interface TargetCompletion {
  label: string;
  /** a category ends in "/" (more to type) */
  category: boolean;
  detail?: string;
}

export const MAX_TARGET_ITEMS = 300;
/** A binary's probes are sent whole up to this many (a libjvm.so has ~520), so the client filters them locally. */
export const MAX_PROBE_ITEMS = 2000;

/**
 * Completions for what follows "prefix/" in a section: functions or tracepoints starting with
 * `typed`; for usdt, binaries (suggested ones, `typedBinaries` named elsewhere in the file, and
 * the folder being typed) and then, after "PATH:", that binary's "provider:name" probes.
 */
export function completeAttachTarget(sec: string, t: AttachTargets, typedBinaries: string[] = []): { items: TargetCompletion[]; replaceFrom: number; incomplete: boolean } | undefined {
  const s = splitAttachSection(sec);
  if (!s) return undefined;
  const base = s.prefix.length + 1;
  if (s.kind === 'usdt') return t.usdt ? completeUsdt(s.target, base, t.usdt, typedBinaries) : undefined;
  const pick = (names: Iterable<string> | undefined, typed: string, from: number, category = false) => {
    if (!names) return undefined;
    const all = [...names].filter((n) => n.startsWith(typed)).sort();
    return { items: all.slice(0, MAX_TARGET_ITEMS).map((label) => ({ label: category ? `${label}/` : label, category })), replaceFrom: from, incomplete: all.length > MAX_TARGET_ITEMS };
  };
  if (s.kind === 'kprobe') return pick(t.kprobeFunctions ?? t.btfFunctions, s.target, base);
  if (s.kind === 'btf-function') return pick(t.btfFunctions, s.target, base);
  if (s.kind === 'raw-tracepoint') return pick(t.rawTracepoints, s.target, base);
  const slash = s.target.indexOf('/');
  if (!t.tracepoints) return undefined;
  if (slash < 0) return pick(t.tracepoints.keys(), s.target, base, true);
  return pick(t.tracepoints.get(s.target.slice(0, slash)), s.target.slice(slash + 1), base + slash + 1);
}

function completeUsdt(target: string, base: number, usdt: UsdtSource, typedBinaries: string[]): { items: TargetCompletion[]; replaceFrom: number; incomplete: boolean } | undefined {
  const colon = target.indexOf(':');
  if (colon >= 0) {
    const file = target.slice(0, colon);
    const found = usdt.probes(file);
    if ('problem' in found) return undefined;
    const typed = target.slice(colon + 1);
    const names = [...new Set(found.probes)].filter((p) => p.startsWith(typed)).sort();
    const detail = `USDT probe of ${path.basename(file)}`;
    return { items: names.slice(0, MAX_PROBE_ITEMS).map((label) => ({ label, category: false, detail })), replaceFrom: base + colon + 1, incomplete: names.length > MAX_PROBE_ITEMS };
  }
  const items = new Map<string, TargetCompletion>();
  const offer = (file: string, detail: string) => {
    if (!file.startsWith(target) || items.has(file)) return;
    const found = usdt.probes(file);
    if ('probes' in found) items.set(file, { label: file, category: false, detail: `${detail}: ${new Set(found.probes).size} USDT probes` });
  };
  for (const f of typedBinaries) offer(f, 'named in this file');
  for (const f of usdt.suggested()) offer(f, 'binary');
  let incomplete = false;
  if (target.startsWith('/')) {
    const dir = target.slice(0, target.lastIndexOf('/') + 1);
    const listed = usdt.list(dir, target.slice(dir.length));
    incomplete = listed.incomplete;
    for (const e of listed.entries) {
      const full = dir + e.name;
      if (e.dir) items.set(`${full}/`, { label: `${full}/`, category: true });
      else offer(full, 'binary');
    }
  }
  const all = [...items.values()].sort((a, b) => a.label.localeCompare(b.label));
  // The folder listing changes with every typed character, so the client must ask again.
  return { items: all.slice(0, MAX_TARGET_ITEMS), replaceFrom: base, incomplete: incomplete || target.startsWith('/') || all.length > MAX_TARGET_ITEMS };
}

/** Files opened per folder listing to look for USDT notes, so a huge lib folder stays quick. */
const MAX_FILES_CHECKED = 200;

/** This machine's binaries with USDT notes, read through the project's ELF note reader. */
export function machineUsdt(): UsdtSource {
  let suggested: string[] | undefined;
  const probes = (file: string) => {
    const n = usdtNotes(file);
    return 'probes' in n ? { probes: n.probes.map((p) => `${p.provider}:${p.name}`) } : n;
  };
  return {
    probes,
    suggested() {
      // The JDKs' libjvm.so (hotspot GC, class loading, monitor probes) and common libraries that
      // distributions build with SystemTap notes; only those that have notes here are offered.
      suggested ??= [
        ...findJdks().filter((j) => j.usdt).map((j) => j.libjvm),
        ...['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64'].flatMap((d) => ['libc.so.6', 'libstdc++.so.6', 'libpthread.so.0'].map((l) => `${d}/${l}`)),
      ].filter((f) => 'probes' in probes(f));
      return suggested;
    },
    list(dir, prefix) {
      let ents: fs.Dirent[];
      try {
        ents = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return { entries: [], incomplete: false };
      }
      const entries: { name: string; dir: boolean }[] = [];
      let checked = 0;
      let incomplete = false;
      for (const e of ents) {
        if (!e.name.startsWith(prefix) || (e.name.startsWith('.') && !prefix.startsWith('.'))) continue;
        let isDir = e.isDirectory();
        if (e.isSymbolicLink()) {
          try {
            isDir = fs.statSync(dir + e.name).isDirectory();
          } catch {
            continue;
          }
        }
        if (isDir) entries.push({ name: e.name, dir: true });
        else if (checked >= MAX_FILES_CHECKED) incomplete = true;
        else if (++checked && 'probes' in usdtNotes(dir + e.name)) entries.push({ name: e.name, dir: false });
      }
      return { entries, incomplete };
    },
  };
}

/** Text symbols of /proc/kallsyms ("t"/"T"), without module suffixes. */
export function kallsymsFunctions(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/^[0-9a-f]+ [tT] (\S+)/gm)) out.add(m[1]);
  return out;
}

const TRACEFS = ['/sys/kernel/tracing/events', '/sys/kernel/debug/tracing/events'];

function readTracepoints(): Map<string, Set<string>> | undefined {
  for (const dir of TRACEFS) {
    let cats: fs.Dirent[];
    try {
      cats = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    const out = new Map<string, Set<string>>();
    for (const c of cats) {
      if (!c.isDirectory()) continue;
      try {
        out.set(c.name, new Set(fs.readdirSync(`${dir}/${c.name}`, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)));
      } catch {
        /* unreadable category: left out */
      }
    }
    if (out.size) return out;
  }
  return undefined;
}

/** Reads this machine's attach targets; each list is left out when its source is unreadable. */
export function loadAttachTargets(btf?: KernelBtf): AttachTargets {
  const kernel = btf ?? loadKernelBtf().btf;
  let kprobeFunctions: Set<string> | undefined;
  try {
    kprobeFunctions = kallsymsFunctions(fs.readFileSync('/proc/kallsyms', 'utf8'));
    if (kprobeFunctions.size === 0) kprobeFunctions = undefined;
  } catch {
    /* no kallsyms: BTF functions stand in */
  }
  return { release: os.release(), kprobeFunctions, btfFunctions: kernel?.functions(), tracepoints: readTracepoints(), rawTracepoints: kernel?.rawTracepoints(), usdt: machineUsdt() };
}
