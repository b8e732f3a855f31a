// One long-lived llvm-symbolizer child (RECIPES: ~24k addresses/s with DWARF lines, inlined
// frames and demangling; a process per request would pay its start-up and DWARF parsing each
// time). Requests are "MODULE 0xVADDR" lines; it answers each with exactly one JSON line, in
// order, flushed per line, so a FIFO of request batches matches answers to questions.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import type { SymResult } from './types';
import type { InlinedFrame } from '../../protocol/frames';

export interface LlvmRequest {
  /** path llvm-symbolizer can open (ours: /proc/OURPID/fd/N, stable for the module's lifetime) */
  module: string;
  /** link-time virtual address */
  vaddr: bigint;
}

export interface LlvmAnswers {
  results: (SymResult | undefined)[];
  complete: boolean;
}

/** One symbolize() call: answers fill `results` in order; resolved when all arrived or the child failed. */
interface Batch {
  results: (SymResult | undefined)[];
  got: number;
  resolve(r: LlvmAnswers): void;
}

/** No answer for this long while requests are pending means the child is stuck (e.g. a huge corrupt file). */
const STALL_MS = 30_000;
const MAX_RESTARTS = 3;

const CANDIDATES = ['/usr/bin/llvm-symbolizer', ...[19, 18, 17, 16, 15, 14, 13].map((v) => `/usr/bin/llvm-symbolizer-${v}`)];

/** The configured path, else the first llvm-symbolizer found on PATH or in /usr/bin. */
export function findLlvmSymbolizer(configured?: string): string | undefined {
  if (configured) return configured;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && isExecutable(`${dir}/llvm-symbolizer`)) return `${dir}/llvm-symbolizer`;
  }
  return CANDIDATES.find(isExecutable);
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

export class LlvmSymbolizer {
  private child?: ChildProcessWithoutNullStreams;
  private batches: Batch[] = [];
  private restarts = 0;
  private stallTimer?: NodeJS.Timeout;
  private lastAnswer = 0;
  /** partial line carried between stdout chunks */
  private tail = '';
  /** set once it cannot be used any more; callers then fall back to ELF symbols */
  failure?: string;

  constructor(
    private readonly path: string,
    private readonly extraArgs: string[],
    private readonly log: (m: string) => void,
  ) {}

  get usable(): boolean {
    return this.failure === undefined;
  }

  /**
   * Answers in request order, undefined where it could not symbolize. complete=false when the
   * child failed before answering everything: the missing answers say nothing about the address.
   */
  symbolize(reqs: LlvmRequest[]): Promise<LlvmAnswers> {
    if (reqs.length === 0) return Promise.resolve({ results: [], complete: true });
    const child = this.ensureChild();
    if (!child) return Promise.resolve({ results: reqs.map(() => undefined), complete: false });
    const done = new Promise<LlvmAnswers>((resolve) => {
      this.batches.push({ results: new Array(reqs.length).fill(undefined), got: 0, resolve });
    });
    // Paths are ours (/proc/N/fd/M) or absolute; quoting keeps spaces intact.
    child.stdin.write(reqs.map((r) => `"${r.module}" 0x${r.vaddr.toString(16)}\n`).join(''));
    this.armStallTimer();
    return done;
  }

  dispose(): void {
    this.failure ??= 'disposed';
    this.stop();
  }

  private ensureChild(): ChildProcessWithoutNullStreams | undefined {
    if (this.failure) return undefined;
    if (this.child) return this.child;
    const child = spawn(this.path, ['--output-style=JSON', '--inlining', '--demangle', ...this.extraArgs], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    this.tail = '';
    child.on('error', (e: NodeJS.ErrnoException) => {
      this.giveUp(
        e.code === 'ENOENT'
          ? `llvm-symbolizer not found at ${this.path} (install the llvm package, or set llvmSymbolizerPath)`
          : `llvm-symbolizer could not start: ${e.message}`,
      );
    });
    child.stdin.on('error', () => {
      /* reported through 'exit' */
    });
    child.stderr.on('data', (d: Buffer) => this.log(`llvm-symbolizer: ${d.toString().trim()}`));
    // Split lines by hand: it answers line by line, and readline's per-line overhead showed in profiles.
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      let text = this.tail + chunk;
      let nl: number;
      while ((nl = text.indexOf('\n')) >= 0) {
        this.onLine(text.slice(0, nl));
        text = text.slice(nl + 1);
      }
      this.tail = text;
    });
    child.on('exit', (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      this.clearStallTimer();
      if (this.failure) return;
      this.log(`llvm-symbolizer exited (${signal ?? code}) with ${this.batches.length} requests outstanding`);
      this.failPending();
      if (++this.restarts > MAX_RESTARTS) this.giveUp(`llvm-symbolizer keeps exiting (${signal ?? code})`);
    });
    return child;
  }

  private onLine(line: string): void {
    const b = this.batches[0];
    if (!b) return;
    this.lastAnswer = Date.now();
    b.results[b.got++] = parseAnswer(line);
    if (b.got < b.results.length) return;
    this.batches.shift();
    if (this.batches.length === 0) this.clearStallTimer();
    b.resolve({ results: b.results, complete: true });
  }

  /** One interval per busy period (not a timer per answer): stuck means no answer for STALL_MS. */
  private armStallTimer(): void {
    this.lastAnswer = Date.now();
    if (this.stallTimer) return;
    this.stallTimer = setInterval(() => {
      if (Date.now() - this.lastAnswer < STALL_MS) return;
      this.log(`llvm-symbolizer gave no answer for ${STALL_MS / 1000} s: restarting it`);
      if (++this.restarts > MAX_RESTARTS) this.giveUp('llvm-symbolizer keeps getting stuck');
      else this.stop();
    }, STALL_MS / 4);
    this.stallTimer.unref();
  }

  private clearStallTimer(): void {
    if (this.stallTimer) clearInterval(this.stallTimer);
    this.stallTimer = undefined;
  }

  /** Outstanding batches resolve with what arrived; the rest stays undefined. */
  private failPending(): void {
    const bs = this.batches;
    this.batches = [];
    for (const b of bs) b.resolve({ results: b.results, complete: false });
  }

  private giveUp(reason: string): void {
    this.failure ??= reason;
    this.stop();
  }

  private stop(): void {
    this.clearStallTimer();
    const child = this.child;
    this.child = undefined;
    this.failPending();
    if (child) {
      child.stdin.destroy();
      child.kill('SIGTERM');
    }
  }
}

interface JsonFrame {
  FunctionName?: string;
  FileName?: string;
  Line?: number;
  Column?: number;
}

/** One JSON answer → the outermost function with its location, inlined callees innermost first. */
export function parseAnswer(line: string): SymResult | undefined {
  let obj: { Symbol?: JsonFrame[] };
  try {
    obj = JSON.parse(line);
  } catch {
    return undefined;
  }
  const syms = obj.Symbol;
  if (!Array.isArray(syms) || syms.length === 0) return undefined;
  // Results are shared through the cache, so they are never mutated (no freeze: it is slow in V8).
  const result: SymResult = toFrame(syms[syms.length - 1]);
  if (syms.length > 1) {
    const inlined: InlinedFrame[] = [];
    for (let i = 0; i < syms.length - 1; i++) {
      const f = toFrame(syms[i]) as InlinedFrame;
      f.function ??= '??';
      inlined.push(f);
    }
    result.inlined = inlined;
  }
  return result;
}

function toFrame(s: JsonFrame): SymResult {
  const f: SymResult = {};
  if (s.FunctionName && s.FunctionName !== '??') f.function = s.FunctionName;
  if (s.FileName && s.FileName !== '??') f.file = s.FileName;
  if (s.Line) f.line = s.Line;
  if (s.Column) f.column = s.Column;
  return f;
}
