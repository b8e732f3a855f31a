// The symbolizer's public surface, shared by the memleak tracer and the CPU profiler.
//
// Use: one Symbolizer per session (or per helper), captureProcess(pid) as early as possible
// (before the target can exit), symbolizeUser(image, addrs, {returnAddresses}) with every frame
// but the leaf marked as a return address, symbolizeKernel(addrs) for kernel stacks,
// refreshPerfMap(image) after asking a JVM for its perf map, warnings(image) for the messages
// to show once, dispose() at the end. Libraries the process loads after the capture are picked
// up by symbolizeUser itself (it re-reads the maps when an address is outside them) while the
// process runs; refreshMaps(image) does it on demand, e.g. once per report interval.
export type { Frame, FrameKind, InlinedFrame } from '../../protocol/frames';
export type { ProcessImage } from './types';
export { Symbolizer, type SymbolizerOptions, type UserOptions } from './symbolizer';
export { parseKallsyms } from './kallsyms';
export { parsePerfMap } from './perfMap';
export { perfMapKind } from '../../protocol/frames';
