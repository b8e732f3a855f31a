// The tracers built on the log2-histogram kit, each under its catalog name: a kit tracer's one line
// outside its own files and its catalog entry. Its CLI command, helper sessions, editor command and
// panel follow from this line and the catalog (tracers/index.ts types it against the catalog).
export { runqlatTracer as runqlat } from './runqlat/tracer';
export { biolatencyTracer as biolatency } from './biolatency';
export { cpudistTracer as cpudist } from './cpudist';
export { tcplatTracer as tcplat } from './tcplat';
