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

/** A file we cannot read as a profile: the message says why, for the user. */
export class ImportError extends Error {}

/** A file that went past one of PROFILE_LIMITS: the message names the file and the limit. */
export class LimitError extends ImportError {
  constructor(
    readonly limit: ProfileLimitName,
    message: string,
  ) {
    super(message);
    this.name = 'LimitError';
  }

  static of(limit: ProfileLimitName, max: number, file: string, what: string): LimitError {
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
 * Throws a LimitError when JSON text nests deeper than maxJsonDepth. One linear pass over the
 * text (strings skipped), before JSON.parse builds anything.
 */
export function checkJsonDepth(text: string, budget: ReadBudget): void {
  const max = budget.limits.maxJsonDepth;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote (escaped characters included)
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) budget.fail('maxJsonDepth', 'the nesting of the JSON');
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
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
