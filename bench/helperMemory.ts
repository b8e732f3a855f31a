import type { BenchContext, Row } from './lib';
export async function benchHelperMemory(_ctx: BenchContext): Promise<Row[]> { throw new Error('todo'); }
