import type { BenchContext, Row } from './lib';
export async function benchSymbolizeRows(_ctx: BenchContext): Promise<Row[]> { throw new Error('todo'); }
