// How a profile's user stacks were unwound, in one line for the flame-graph view and the CLI
// (the view says which modules use which).
import type { UnwindInfo } from '../protocol/profile';

export function unwindSummary(u: UnwindInfo | undefined): string | undefined {
  if (!u) return undefined;
  const agent = u.javaAgent ? ' · Java frames from the JVMTI agent (AsyncGetCallTrace), joined where the native stack reaches JIT or interpreter code' : '';
  if (u.mode === 'fp') return `User stacks: frame pointers walked in the kernel (--unwind fp). Callers of code built without frame pointers are missing.${agent}`;
  const parts = ['User stacks: unwound by CFI (.eh_frame/.debug_frame, libdw)'];
  if (u.modules?.length) {
    const cfi = u.modules.filter((m) => m.cfi !== 'none').map((m) => base(m.module));
    const fpOnly = u.modules.filter((m) => m.cfi === 'none').map((m) => base(m.module));
    parts.push(`CFI: ${cfi.join(', ') || 'none'}`);
    if (fpOnly.length) parts.push(`frame pointers only: ${fpOnly.join(', ')}`);
  }
  if (!u.javaAgent) parts.push('code without CFI (JIT) by frame pointers');
  if (u.truncated) parts.push(`${u.truncated} samples deeper than the stack copy`);
  return parts.join(' · ') + agent;
}

const base = (p: string) => (p.startsWith('[vdso') ? '[vdso]' : p.slice(p.lastIndexOf('/') + 1));
