// The limits every profile reader works within (pprof, gzip, folded stacks, speedscope,
// .cpuprofile, our --json), and the budget that enforces them while reading. Profile files come
// from anywhere (a cloned repository, a URL), and the editor opens them without asking, also in
// Restricted Mode: a reader must end in bounded time and memory whatever the bytes say, and say
// which limit a file went past. Each limit is set well above the largest real profiles we know,
// so that only files built to hurt reach one. Pure: no node modules.

const MiB = 1024 * 1024;

export const PROFILE_LIMITS = {
  /**
   * Bytes of a file as read: a quarter of V8's longest string (2^29 - 24 UTF-16 units), so any text
   * that fits is decodable; ~10× the largest speedscope and --json exports we have seen.
   */
  maxFileBytes: 256 * MiB,
  /**
   * Bytes a gzip-compressed file decompresses to (pprof is always gzipped, text formats rarely):
   * a busy Go server's CPU profile is 1-5 MB, the largest merged Parca and Pyroscope exports we
   * know ~50 MB. Decompression holds the output twice for a moment (its chunks, then one buffer),
   * so a gzip bomb costs ~130 MB and stops here.
   */
  maxDecompressedBytes: 64 * MiB,
  /** Frames of one stack. Kernel stacks end at 127, perf at 127, async-profiler at 2,048, JVMTI at 1,024 by default. */
  maxStackDepth: 16_384,
  /**
   * Frames of all stacks together (what every view walks, 8 bytes each in every copy): 10M is ~80 MiB
   * per copy, and 3-10× the largest real profiles here (50,000 distinct stacks 60 deep are 3M).
   */
  maxTotalFrames: 10_000_000,
  /**
   * Stacks (pprof samples, folded lines, speedscope samples and events), ~100 bytes each as read:
   * pprof and folded files hold one per distinct stack (thousands); speedscope one per sample, 1M
   * is 5 minutes of 8 threads at 400 Hz.
   */
  maxSamples: 1_000_000,
  /**
   * Distinct frames (function, module, kind), each ~0.5 KiB while read: a machine-wide profile of
   * the kernel (~80,000 functions) and a large JVM (~100,000 compiled methods) fits.
   */
  maxDistinctFrames: 250_000,
  /** Lines of one pprof location (the functions inlined at one address); compilers inline a few dozen deep at most. */
  maxLinesPerLocation: 256,
  /** Nesting of a JSON file: the formats we read are 6 levels deep. */
  maxJsonDepth: 64,
  /** Decoded protobuf records (samples, locations, lines, labels, strings, ids): each costs tens of bytes of heap. */
  maxProtobufRecords: 40_000_000,
  /** Wall time of one read. */
  maxReadMs: 30_000,
  /**
   * Heap of the worker that reads a file for the editor and the CLI (../sys/profileReader.ts): what
   * a 256 MiB JSON file needs, and what a file that gets past every count above is stopped at.
   */
  maxReaderHeapMb: 2048,
} as const;

export type ProfileLimitName = keyof typeof PROFILE_LIMITS;
export type ProfileLimits = Record<ProfileLimitName, number>;

/**
 * The limits a saved session file is read within (*.ebpf-session.json, a JVM timeline export,
 * a stored session): they open on a double-click and the Sessions view reads up to 500 of them
 * from the workspace, on the extension host's thread (JSON.parse's result lives there, so a
 * worker would only move the cost into a structured clone back), so the text is checked in one
 * linear pass before anything is built.
 */
export const SESSION_LIMITS = {
  /** Bytes of a file: what the Sessions view stores at most for one session (sessionStore's MAX_ONE_BYTES). */
  maxFileBytes: 32 * MiB,
  /** Nesting of the JSON: session documents are 8 levels deep. */
  maxJsonDepth: 64,
  /**
   * Heap JSON.parse would build, estimated from the text (~100 bytes an object or array, 16 a
   * member or element, 48 + its length a string value, 32 more a fractional or large number):
   * a 30-second CPU profile session with 5,000 stacks is ~5 MB, and 2M empty objects (6 MB of
   * text) ~220 MB. At this limit a parse costs ~110 MB and < 1 s.
   */
  maxJsonHeapBytes: 96 * MiB,
} as const;

export type SessionLimitName = keyof typeof SESSION_LIMITS;
export type SessionLimits = Record<SessionLimitName, number>;
export type LimitName = ProfileLimitName | SessionLimitName;

/** A file we cannot read as a profile: the message says why, for the user. */
export class ImportError extends Error {}

/** A file that went past one of PROFILE_LIMITS: the message names the file and the limit. */
export class LimitError extends ImportError {
  constructor(
    readonly limit: LimitName,
    message: string,
  ) {
    super(message);
    this.name = 'LimitError';
  }

  static of(limit: LimitName, max: number, file: string, what: string): LimitError {
    return new LimitError(limit, `${file}: ${what} is over the limit ${limit} (${max.toLocaleString('en-US')}); the file is not read`);
  }
}

/** How often (in counted units) the budget looks at the clock. */
const CLOCK_EVERY = 1 << 16;

/**
 * Counts what a reader builds and throws a LimitError as soon as a limit is passed, so a hostile
 * file costs at most the limits, never what it asks for.
 */
export class ReadBudget {
  private totalFrames = 0;
  private samples = 0;
  private distinct = 0;
  private sinceClock = 0;
  private readonly deadline: number;

  constructor(
    readonly file: string,
    readonly limits: ProfileLimits = PROFILE_LIMITS,
    private readonly now: () => number = Date.now,
  ) {
    this.deadline = now() + limits.maxReadMs;
  }

  fail(limit: ProfileLimitName, what: string): never {
    throw LimitError.of(limit, this.limits[limit], this.file, what);
  }

  /** Checks one number against a limit. */
  check(limit: ProfileLimitName, value: number, what: string): void {
    if (value > this.limits[limit]) this.fail(limit, `${what} (${value.toLocaleString('en-US')})`);
  }

  /** One more stack of `depth` frames. */
  stack(depth: number): void {
    if (depth > this.limits.maxStackDepth) this.fail('maxStackDepth', `a stack of ${depth.toLocaleString('en-US')} frames`);
    if (++this.samples > this.limits.maxSamples) this.fail('maxSamples', 'the number of stacks');
    this.totalFrames += depth;
    if (this.totalFrames > this.limits.maxTotalFrames) this.fail('maxTotalFrames', 'the frames of all stacks together');
    this.work(depth + 1);
  }

  /** A stack under construction has reached `depth` frames (checked before it is built further). */
  depth(depth: number): void {
    if (depth > this.limits.maxStackDepth) this.fail('maxStackDepth', `a stack of more than ${this.limits.maxStackDepth.toLocaleString('en-US')} frames`);
  }

  /** One more distinct frame. */
  frame(): void {
    if (++this.distinct > this.limits.maxDistinctFrames) this.fail('maxDistinctFrames', 'the number of distinct frames');
  }

  /** `units` of work done: looks at the clock now and then. */
  work(units = 1): void {
    this.sinceClock += units;
    if (this.sinceClock < CLOCK_EVERY) return;
    this.sinceClock = 0;
    if (this.now() > this.deadline) this.fail('maxReadMs', 'the time spent reading (ms)');
  }
}

/**
 * Estimated heap of what JSON.parse builds (measured on Node 22, peak RSS of the parse): per
 * object or array, per member or element, per string value (plus its length), per boxed number.
 */
const HEAP_CONTAINER = 96;
const HEAP_SLOT = 16;
const HEAP_STRING = 48;
const HEAP_NUMBER = 32;

/**
 * One linear pass over JSON text (strings skipped): calls `deep` as soon as it nests deeper than
 * `maxDepth`, and returns an estimate of the heap JSON.parse would build from it.
 */
function scanJson(text: string, maxDepth: number, deep: () => never): number {
  let depth = 0;
  let heap = HEAP_SLOT;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote (escaped characters included)
      const start = i;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
      // keys are interned and shared by every object that has them: only values cost their length
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) <= 0x20) j++;
      if (text.charCodeAt(j) !== 0x3a) heap += HEAP_STRING + (i - start);
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) deep();
      heap += HEAP_CONTAINER;
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c) heap += HEAP_SLOT;
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      // a number: a fraction, an exponent or 10+ digits is a boxed double, not a small integer
      const start = i;
      let boxed = false;
      for (; i + 1 < text.length; i++) {
        const d = text.charCodeAt(i + 1);
        if (d === 0x2e || d === 0x65 || d === 0x45) boxed = true;
        else if (!(d === 0x2b || d === 0x2d || (d >= 0x30 && d <= 0x39))) break;
      }
      if (boxed || i - start >= 9) heap += HEAP_NUMBER;
    }
  }
  return heap;
}

/**
 * Throws a LimitError when JSON text nests deeper than maxJsonDepth. One linear pass over the
 * text (strings skipped), before JSON.parse builds anything.
 */
export function checkJsonDepth(text: string, budget: ReadBudget): void {
  scanJson(text, budget.limits.maxJsonDepth, () => budget.fail('maxJsonDepth', 'the nesting of the JSON'));
}

/**
 * Throws a LimitError naming `file` when session text is longer, nests deeper or would build more
 * heap than `limits` allow; cheap next to the parse it guards.
 */
export function checkSessionJson(text: string, file: string, limits: SessionLimits = SESSION_LIMITS): void {
  if (text.length > limits.maxFileBytes) throw LimitError.of('maxFileBytes', limits.maxFileBytes, file, `the size of the file (${text.length.toLocaleString('en-US')} characters)`);
  const heap = scanJson(text, limits.maxJsonDepth, () => {
    throw LimitError.of('maxJsonDepth', limits.maxJsonDepth, file, 'the nesting of the JSON');
  });
  if (heap > limits.maxJsonHeapBytes) throw LimitError.of('maxJsonHeapBytes', limits.maxJsonHeapBytes, file, `the memory its values would take (~${heap.toLocaleString('en-US')} bytes: too many entries)`);
}

/** JSON.parse within the depth limit; a syntax error becomes an ImportError. */
export function parseJson(text: string, budget: ReadBudget): unknown {
  checkJsonDepth(text, budget);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ImportError(`the file looks like JSON but does not parse: ${(e as Error).message}`);
  }
}
