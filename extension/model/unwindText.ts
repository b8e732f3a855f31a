// How a profile's user stacks were unwound: one short line for the flame-graph header
// ("stacks: CFI for 14 modules, frame pointers for 1, JIT by perf map" — the JIT part only for
// a JVM) and the details behind it
// for its tooltip and the CLI (which modules use which). Only code modules count: a process also
// maps data files (classes.jsa, locale files such as LC_COLLATE, caches), which unwinding never meets.
import type { UnwindInfo, UnwindModuleInfo } from '../protocol/profile';

const base = (p: string) => (p.startsWith('[vdso') ? '[vdso]' : p.slice(p.lastIndexOf('/') + 1));

/** Data a process maps without running it: CDS archives, locales, caches, fonts, jars, the JVM's hsperfdata and the like. */
const DATA_FILE = /\.(jsa|jar|ja|jmod|mo|cache|dat|db|idx|ttf|otf|pak|bin|json|xml|txt|sym|ci)$|^LC_[A-Z_]+$|^locale-archive$|^modules$|^gconv-modules/;

/** A module whose code may be on a stack: shared objects, executables, the vdso. */
export function isCodeModule(path: string): boolean {
  if (path.startsWith('[vdso')) return true;
  if (path.startsWith('[') || path.startsWith('/dev/') || path.startsWith('/memfd:') || /^\/(usr\/)?(share|lib)\/locale\//.test(path) || path.startsWith('/usr/share/') || path.includes('/hsperfdata_')) return false;
  return !DATA_FILE.test(base(path));
}

export function codeModules(u: UnwindInfo): UnwindModuleInfo[] {
  return (u.modules ?? []).filter((m) => isCodeModule(m.module));
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Whether JIT frames were named from a perf map: a JVM profiled without the agent. Documents
 * written before the tracer said so tell it by libjvm.so among the modules.
 */
function namesJit(u: UnwindInfo): boolean {
  return u.perfMap ?? (u.modules ?? []).some((m) => base(m.module) === 'libjvm.so');
}

/** The header line. */
export function unwindSummary(u: UnwindInfo | undefined): string | undefined {
  if (!u) return undefined;
  const parts: string[] = [];
  if (u.mode === 'fp') parts.push('frame pointers (--unwind fp)');
  else if (u.mode === 'cfi') parts.push(`unwind tables in the kernel (--unwind cfi${u.cfiTables ? `: ${plural(u.cfiTables.files, 'file')}, ${Math.round(u.cfiTables.bytes / 1024)} KiB` : ''})`);
  else if (u.modules) {
    const mods = codeModules(u);
    const cfi = mods.filter((m) => m.cfi !== 'none').length;
    const fp = mods.length - cfi;
    parts.push(`CFI for ${plural(cfi, 'module')}`);
    if (fp) parts.push(`frame pointers for ${fp}`);
  } else parts.push('CFI where modules have it, frame pointers elsewhere');
  if (u.javaAgent) parts.push('Java by the JVMTI agent');
  else if (namesJit(u)) parts.push(u.mode === 'fp' ? 'JIT named by perf map' : 'JIT by perf map');
  if (u.truncated) parts.push(`${plural(u.truncated, 'sample')} cut short`);
  if (u.cutByCap) parts.push(`${plural(u.cutByCap, 'sample')} cut by the table memory cap`);
  return `stacks: ${parts.join(', ')}`;
}

/** The header's tooltip: what the line means, module by module. */
export function unwindDetails(u: UnwindInfo | undefined): string | undefined {
  if (!u) return undefined;
  const lines: string[] = [];
  if (u.mode === 'fp') lines.push('User stacks: frame pointers walked in the kernel (--unwind fp). Callers of code built without frame pointers are missing.');
  else if (u.mode === 'cfi') {
    lines.push('User stacks: walked in the kernel by unwind tables compiled from each file\'s .eh_frame (--unwind cfi); code in files without them by frame pointers.');
    const stops = Object.entries(u.cfiStops ?? {}).filter(([k, n]) => k !== 'end' && n > 0);
    if (stops.length) lines.push(`Walks that stopped before the outermost frame: ${stops.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  } else {
    lines.push('User stacks: unwound by CFI (.eh_frame/.debug_frame, libdw); code without CFI by frame pointers.');
    if (u.modules) {
      const mods = codeModules(u);
      const cfi = mods.filter((m) => m.cfi !== 'none').map((m) => base(m.module));
      const fp = mods.filter((m) => m.cfi === 'none').map((m) => base(m.module));
      lines.push(`CFI (${cfi.length}): ${cfi.join(', ') || 'none'}`);
      if (fp.length) lines.push(`Frame pointers only (${fp.length}): ${fp.join(', ')}`);
    }
  }
  if (u.javaAgent) lines.push('Java frames from the JVMTI agent (AsyncGetCallTrace), joined where the native stack reaches JIT or interpreter code.');
  else if (namesJit(u)) lines.push('JIT-compiled code (no CFI) by frame pointers, named from the perf map (/tmp/perf-PID.map).');
  if (u.truncated) lines.push(`${plural(u.truncated, 'sample')} deeper than the stack copy: their outermost callers are missing (raise the stack copy size).`);
  if (u.cutByCap) lines.push(`${plural(u.cutByCap, 'sample')} met a file whose unwind table did not fit the table memory cap${u.cfiTables?.capBytes ? ` (${Math.round(u.cfiTables.capBytes / 2 ** 20)} MiB)` : ''}: their callers beyond it are missing (raise --cfi-max-mb).`);
  return lines.join('\n');
}
