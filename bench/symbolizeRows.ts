// `symbolize`: the symbolizer benchmark (bench/symbolize.ts, the symbolizer's own) as rows:
// warm addresses/s (our cache) against a bare long-lived llvm-symbolizer, and cold (fresh
// Symbolizer) against addr2line, on the same 10k libc + 10k C++ addresses.
import { benchSymbolize } from './symbolize';
import type { BenchContext, Row } from './lib';

export async function benchSymbolizeRows(ctx: BenchContext): Promise<Row[]> {
  const s = await benchSymbolize();
  ctx.log(`  ${JSON.stringify(s)}`);
  const share = `${Math.round(s.namedShare * 100)}% named, ${Math.round(s.lineShare * 100)}% with file:line`;
  return [
    {
      name: 'symbolize warm (libc + C++ addresses)',
      value: s.warmPerSec,
      unit: 'addresses/s',
      target: 100_000,
      better: 'higher',
      peer: { name: 'llvm-symbolizer (one long-lived process)', value: s.llvmSymbolizerPerSec },
      detail: `${s.addresses.toLocaleString('en-US')} addresses (10k in libc, 10k in a C++ -O2 -g binary), best of 3; ${share}; addr2line on the same addresses: ${s.addr2linePerSec.toLocaleString('en-US')}/s`,
    },
    {
      name: 'symbolize cold (fresh symbolizer)',
      value: s.coldPerSec,
      unit: 'addresses/s',
      target: null,
      better: 'higher',
      peer: { name: 'addr2line (one process per binary)', value: s.addr2linePerSec },
      detail: 'includes starting the symbolizer and loading DWARF',
    },
  ];
}
