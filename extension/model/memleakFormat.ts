// Text renderings of a memleak result shared by the CLI and the leak view: folded stacks
// weighted by outstanding bytes (flamegraph.pl input; bcc#1125), and memleak-style text.
import type { MemleakFrame, MemleakResult, MemleakStack } from '../protocol/memleak';

/** A frame's name in folded output: function, else module+offset; never ';' or newlines. */
export function foldedName(f: MemleakFrame): string {
  const base = f.module.slice(f.module.lastIndexOf('/') + 1);
  const name = f.function ?? (base ? `${base}+${f.offset ?? f.address}` : f.address);
  return name.replace(/[;\n\r]/g, '_').replace(/ /g, '_');
}

/** One line per stack, root first: "main;make_node;malloc 4096". Stacks with equal paths merge. */
export function toFolded(result: Pick<MemleakResult, 'stacks'>): string {
  const sums = new Map<string, number>();
  for (const s of result.stacks) {
    const key = s.frames.length ? [...s.frames].reverse().map(foldedName).join(';') : '[unknown stack]';
    sums.set(key, (sums.get(key) ?? 0) + s.bytes);
  }
  return [...sums.entries()].map(([k, v]) => `${k} ${v}`).join('\n');
}

export function frameText(f: MemleakFrame): string {
  const where = f.file ? ` (${f.file}${f.line ? `:${f.line}` : ''})` : '';
  const mod = f.module.startsWith('[') ? f.module.slice(1, -1) : f.module.slice(f.module.lastIndexOf('/') + 1);
  return `${f.address} ${f.function ?? (f.offset ? `${mod}+${f.offset}` : '??')}${where} [${mod}]`;
}

export function stackText(s: MemleakStack): string {
  const head =
    s.bytesStdErr !== undefined
      ? `\t≈${s.bytes} ± ${s.bytesStdErr} bytes in ≈${s.allocations} ± ${s.allocationsStdErr ?? 0} allocations from stack (estimated; oldest sampled ${s.oldestAgeMs} ms)`
      : `\t${s.bytes} bytes in ${s.allocations} allocations from stack (oldest ${s.oldestAgeMs} ms)`;
  return [head, ...s.frames.map((f) => `\t\t${frameText(f)}`)].join('\n');
}

/** `sampleBytes`: the figures are estimates from sampling at that mean interval (± one standard error). */
export function reportText(stacks: MemleakStack[], title: string, sampleBytes?: number): string {
  const note = sampleBytes ? ` (estimates from sampling every ~${sampleBytes} bytes; ± is one standard error)` : '';
  return [`${title}: ${stacks.length} stack${stacks.length === 1 ? '' : 's'} with outstanding allocations${note}:`, ...stacks.map(stackText)].join('\n');
}
