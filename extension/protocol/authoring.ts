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

/** Where and why the verifier rejected a program (authoring/verifierLog.ts reads it off the log). */
export interface VerifierDiagnostic {
  /** file as the log names it (a basename), or the matching source's path when sources were given */
  file: string;
  /** 1-based */
  line: number;
  /** 1-based; where the annotated source text starts on that line, else 1 */
  column: number;
  severity: 'error';
  /** the verifier's error line(s), e.g. "R0 invalid mem access 'map_value_or_null'" */
  message: string;
  /** one line on the common cause and fix, beside the raw message */
  hint?: string;
  /** program (function) name the log belongs to, when known */
  program?: string;
  /** the last few log lines up to and including the error */
  excerpt: string;
}

/** The verdict on one object: the helper's bpf/verify answer and `ebpf-studio verify --json`. */
export interface VerifyResponse {
  ok: boolean;
  diagnostics: VerifierDiagnostic[];
  log: string;
  /** accepted programs: instructions processed and verification time (µs) */
  stats?: { program?: string; insns: number; timeUs?: number; totalStates?: number; peakStates?: number }[];
}

export const bpfVerify = new RequestType<VerifyParams, VerifyResponse, void>('bpf/verify');
