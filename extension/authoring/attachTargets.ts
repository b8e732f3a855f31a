// What SEC("...") can attach to on this kernel: kernel functions (kprobe: /proc/kallsyms text
// symbols; fentry/fexit: functions the kernel's BTF describes), tracepoints by category (tracefs
// events/, when readable) and raw tracepoints (BTF "btf_trace_X" typedefs). Used by the language
// server to complete attach targets and to warn about one this kernel does not have. The check
// and completion are pure over an AttachTargets; loadAttachTargets reads the machine.
import fs from 'node:fs';
import os from 'node:os';
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
}

type TargetKind = 'kprobe' | 'btf-function' | 'tracepoint' | 'raw-tracepoint';

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
  if (!t.rawTracepoints || t.rawTracepoints.has(s.target)) return undefined;
  return `SEC("${sec}"): no raw tracepoint "${s.target}" ${on}.${hint(closest(s.target, t.rawTracepoints), (x) => `${s.prefix}/${x}`)}`;
}

export interface TargetCompletion {
  label: string;
  /** a category ends in "/" (more to type) */
  category: boolean;
}

export const MAX_TARGET_ITEMS = 300;

/** Completions for what follows "prefix/" in a section: functions or tracepoints starting with `typed`. */
export function completeAttachTarget(sec: string, t: AttachTargets): { items: TargetCompletion[]; replaceFrom: number; incomplete: boolean } | undefined {
  const s = splitAttachSection(sec);
  if (!s) return undefined;
  const base = s.prefix.length + 1;
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
  return { release: os.release(), kprobeFunctions, btfFunctions: kernel?.functions(), tracepoints: readTracepoints(), rawTracepoints: kernel?.rawTracepoints() };
}
