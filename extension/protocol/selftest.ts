// JSON shapes of the selftest tracer: the trivial probe that proves the four layers work
// (exec events of child processes of a given parent, through a ring buffer).

export interface SelftestOptions {
  /** only execs whose parent is this process (0 = all) */
  parentPid: number;
  /** echoed by the kernel side in every event, to prove rodata is set */
  magic: number;
  /** attach mode of the exec probe */
  attach: 'tracepoint' | 'raw_tp' | 'tp_btf';
}

export interface SelftestEvent {
  pid: number;
  comm: string;
  magic: number;
}

export interface SelftestUpdate {
  events: SelftestEvent[];
}

export interface SelftestResult {
  tracer: 'selftest';
  events: SelftestEvent[];
  lost: number;
}
