import type { BenchContext, Row } from './lib';
export async function benchEvents(_ctx: BenchContext): Promise<Row[]> { throw new Error('todo'); }
