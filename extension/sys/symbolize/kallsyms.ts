// /proc/kallsyms: "ffffffff81000000 T _stext" or "ffffffffc0a01000 t fn\t[module]". Only text
// symbols matter for stacks. Without privilege (kptr_restrict) every address reads as zero.
import fs from 'node:fs';
import { AddressTable, type Range } from './addressTable';

export interface KernelSymbol {
  name: string;
  /** loadable module name, undefined for vmlinux */
  module?: string;
}

export interface Kallsyms {
  table: AddressTable<KernelSymbol>;
  /** true when the file listed symbols but all at address 0 (no privilege) */
  hidden: boolean;
}

const TEXT_TYPES = new Set(['t', 'T', 'w', 'W']);
/** bound for the last symbol of the table, which has no successor to end it */
const LAST_SYMBOL_SPAN = 0x100000n;

export function parseKallsyms(text: string): Kallsyms {
  const syms: { addr: bigint; sym: KernelSymbol }[] = [];
  let listed = 0;
  let pos = 0;
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = text.length;
    const line = text.slice(pos, nl);
    pos = nl + 1;
    const sp1 = line.indexOf(' ');
    const sp2 = line.indexOf(' ', sp1 + 1);
    if (sp1 <= 0 || sp2 < 0) continue;
    listed++;
    if (!TEXT_TYPES.has(line.slice(sp1 + 1, sp2))) continue;
    const addr = BigInt('0x' + line.slice(0, sp1));
    if (addr === 0n) continue;
    const rest = line.slice(sp2 + 1);
    const tab = rest.indexOf('\t');
    const sym: KernelSymbol =
      tab < 0 ? { name: rest.trim() } : { name: rest.slice(0, tab), module: rest.slice(tab + 1).replace(/^\[|\]$/g, '') };
    syms.push({ addr, sym });
  }
  syms.sort((a, b) => (a.addr < b.addr ? -1 : a.addr > b.addr ? 1 : 0));
  // kallsyms has no sizes: a symbol runs to the next one.
  const ranges: Range<KernelSymbol>[] = syms.map((s, i) => ({
    start: s.addr,
    end: i + 1 < syms.length && syms[i + 1].addr > s.addr ? syms[i + 1].addr : s.addr + LAST_SYMBOL_SPAN,
    value: s.sym,
  }));
  return { table: new AddressTable(ranges), hidden: listed > 0 && syms.length === 0 };
}

export function readKallsyms(path = '/proc/kallsyms'): Kallsyms {
  return parseKallsyms(fs.readFileSync(path, 'latin1'));
}
