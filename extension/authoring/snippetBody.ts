// Expands a VS Code snippet body the way the editor does when the user accepts every default:
// ${1:default} → default (nested too), $1/${1} → the default given to that tab stop elsewhere,
// ${1|a,b|} → the first choice, $0 and unknown variables → "". Used to prove that every
// snippet compiles as inserted.

export function expandSnippet(body: string | string[]): string {
  const text = Array.isArray(body) ? body.join('\n') : body;
  const defaults = new Map<string, string>();
  // Resolve innermost placeholders first, recording each tab stop's default for its mirrors.
  let cur = text;
  for (let guard = 0; guard < 50; guard++) {
    const next = cur
      .replace(/\$\{(\d+)\|([^|}]*)\|\}/g, (_, n: string, choices: string) => {
        const v = choices.split(',')[0];
        if (!defaults.has(n)) defaults.set(n, v);
        return v;
      })
      .replace(/\$\{(\d+):([^${}]*)\}/g, (_, n: string, v: string) => {
        if (!defaults.has(n)) defaults.set(n, v);
        return v;
      });
    if (next === cur) break;
    cur = next;
  }
  return cur
    .replace(/\$\{(\d+)\}|\$(\d+)/g, (_, a: string | undefined, b: string | undefined) => defaults.get((a ?? b)!) ?? '')
    .replace(/\$\{[A-Z_]+(?::([^}]*))?\}|\$[A-Z_]+\b/g, (_, d: string | undefined) => d ?? '')
    .replace(/\\\$/g, '$');
}
