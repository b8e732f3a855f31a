// Names the cause when a BPF program calls a function nothing declares or resolves: a helper name
// typo ("bpf_ringbuf_reserv") is an undeclared function to clang and an unresolved extern to
// libbpf ("failed to find BTF for extern 'X': -2", which libbpf reports as ENOENT from open).
// Both become one message at the call's line that names the function and the closest helper.
import fs from 'node:fs';
import { parseHelperDefs } from './helperDefs';
import { editDistance } from './sections';
import type { VerifierDiagnostic } from '../protocol/authoring';
import type { SourceFile } from './verifierLog';

export const HELPER_DEFS = '/usr/include/bpf/bpf_helper_defs.h';

let helperNameCache: string[] | undefined;

/** Every BPF helper libbpf declares (empty when libbpf-dev is missing). */
export function helperNames(file = HELPER_DEFS): string[] {
  if (!helperNameCache) {
    try {
      helperNameCache = parseHelperDefs(fs.readFileSync(file, 'utf8')).map((h) => h.name);
    } catch {
      helperNameCache = [];
    }
  }
  return helperNameCache;
}

/** The helper closest to `name` (at most 3 edits), e.g. bpf_ringbuf_reserv → bpf_ringbuf_reserve. */
export function closestHelper(name: string, names: string[] = helperNames()): string | undefined {
  let best: string | undefined;
  let bestD = 4;
  for (const n of names) {
    if (Math.abs(n.length - name.length) >= bestD) continue;
    const d = editDistance(name, n);
    if (d < bestD) {
      bestD = d;
      best = n;
    }
  }
  return best === name ? undefined : best;
}

/** The function clang's message says is undeclared, if that is what it says. */
export function undeclaredFunction(message: string): string | undefined {
  return /(?:implicit declaration of function|call to undeclared function) '(\w+)'/.exec(message)?.[1];
}

/** The cause and the fix for an undeclared or unresolved function `name`. */
export function explainUnresolved(name: string, names: string[] = helperNames()): string {
  const near = closestHelper(name, names);
  const helper = name.startsWith('bpf_') ? 'no BPF helper (bpf/bpf_helper_defs.h) and no kfunc declared with __ksym has this name' : 'it is neither a BPF helper nor a kfunc declared with __ksym';
  return `'${name}' is not a known helper or kfunc: ${helper}.${near ? ` Did you mean '${near}'?` : ' Declare kernel functions (kfuncs) as "extern ... __ksym;" or include the header that declares it.'}`;
}

/** clang's message with the explanation added when it is about an undeclared function. */
export function explainClangMessage(message: string): string {
  const name = undeclaredFunction(message);
  return name ? `${message} — ${explainUnresolved(name)}` : message;
}

/** The externs libbpf could not resolve, from its log. */
export function unresolvedExterns(log: string): string[] {
  const out = new Set<string>();
  for (const m of log.matchAll(/failed to find BTF for extern '(\w+)'|extern \((?:func|var) ksym\) '(\w+)': not found/g)) out.add(m[1] ?? m[2]);
  return [...out];
}

/** One diagnostic per unresolved extern, at the first line that calls it in `sources` (else line 1 of the first source). */
export function unresolvedExternDiagnostics(log: string, sources: SourceFile[], objectPath: string): VerifierDiagnostic[] {
  return unresolvedExterns(log).map((name) => {
    const call = new RegExp(`\\b${name}\\s*\\(`);
    for (const s of sources) {
      const lines = s.text.split('\n');
      const i = lines.findIndex((l) => call.test(l) && !/^\s*(\/\/|\*|\/\*)/.test(l));
      if (i >= 0) {
        const column = lines[i].search(call) + 1;
        return { file: s.path, line: i + 1, column, severity: 'error' as const, message: `unresolved function '${name}': libbpf found no helper or kernel function of that name. ${explainUnresolved(name)}`, excerpt: lines[i].trim() };
      }
    }
    return { file: sources[0]?.path ?? objectPath, line: 1, column: 1, severity: 'error' as const, message: `unresolved function '${name}': libbpf found no helper or kernel function of that name. ${explainUnresolved(name)}`, excerpt: '' };
  });
}
