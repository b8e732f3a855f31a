// What the symbolizer keeps per process and per address; the frame shape it returns is
// protocol/frames.ts.
import type { Frame, InlinedFrame } from '../../protocol/frames';

/** What a capture keeps; opaque to callers beyond the pid. */
export interface ProcessImage {
  readonly pid: number;
}

/** Symbol and line information of one address inside one module (cached per module identity). */
export interface SymResult extends Pick<Frame, 'function' | 'file' | 'line' | 'column'> {
  inlined?: readonly InlinedFrame[];
}

export const hex = (n: bigint): string => '0x' + n.toString(16);
