// Helper requests of BPF authoring beyond tracers: load-and-verify of a user's object.
import { RequestType } from 'vscode-jsonrpc';

export interface VerifyParams {
  /** absolute path of the .bpf.o */
  objectPath: string;
  /** absolute paths of its sources, to turn "@ prog.bpf.c:12" into a path and a column */
  sourcePaths?: string[];
  /** SHA-256 of the object the user confirmed loading as root (extension/editor/helperClient/objectConfirm.ts); the helper refuses without it */
  confirmedSha256?: string;
}

export interface VerifyDiagnostic {
  file: string;
  line: number;
  column: number;
  severity: 'error';
  message: string;
  /** one line on the common cause and fix, beside the raw message */
  hint?: string;
  program?: string;
  excerpt: string;
}

export interface VerifyResponse {
  ok: boolean;
  diagnostics: VerifyDiagnostic[];
  log: string;
  /** accepted programs: instructions processed and verification time (µs) */
  stats?: { program?: string; insns: number; timeUs?: number; totalStates?: number; peakStates?: number }[];
}

export const bpfVerify = new RequestType<VerifyParams, VerifyResponse, void>('bpf/verify');
