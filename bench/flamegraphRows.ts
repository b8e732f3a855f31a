import type { BenchContext, Row } from './lib';
export async function benchFlamegraphRows(_ctx: BenchContext): Promise<Row[]> { throw new Error('todo'); }
