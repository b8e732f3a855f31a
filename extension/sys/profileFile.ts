// Reading and writing profile files in node (the CLI and the extension host): pprof is gzipped
// profile.proto; folded stacks, speedscope and our `profile --json` are text; a JFR recording gives
// its CPU samples. The format is told by the bytes, not the file name, so a renamed file still opens.
//
// Every read is bounded (../model/readLimits.ts): gzip stops at maxDecompressedBytes, each reader
// counts what it builds. The editor and the CLI read through ./profileReader.ts, which runs this
// in a worker with a heap limit and a timeout.
import { gunzipSync, gzipSync } from 'node:zlib';
import type { ProfileResult } from '../protocol/profile';
import { fromPprof, toPprof, type PprofOptions } from '../model/pprof';
import { fromProfileResult, type FlameProfile } from '../model/flamegraph/profileData';
import { checkResult, fromFolded, fromSpeedscope, ImportError } from '../model/flamegraph/formats';
import { fromCpuProfile, isCpuProfile } from '../model/flamegraph/cpuprofile';
import { parseJson, PROFILE_LIMITS, ReadBudget, type ProfileLimits } from '../model/readLimits';
import { isJfr, readJfrBytes } from '../model/jfr/chunk';
import { CPU_EVENTS, JfrProfileBuilder } from '../model/jfr/profile';

export type ProfileFormat = 'pprof' | 'text';

export function encodePprofGz(r: ProfileResult, opts: PprofOptions = {}): Buffer {
  return gzipSync(toPprof(r, opts));
}

const isGzip = (b: Uint8Array) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

/** Whether these (decompressed) bytes are text: valid UTF-8 without NULs or control bytes. */
function looksLikeText(b: Uint8Array): boolean {
  const head = b.subarray(0, 4096);
  for (const c of head) if (c === 0 || (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head.length < b.length ? head.subarray(0, Math.max(0, head.length - 4)) : head);
    return true;
  } catch {
    return false;
  }
}

export interface LoadedProfile {
  flame: FlameProfile;
  /** set when the file held per-frame detail (pprof, our JSON): exact per-line annotations */
  result?: ProfileResult;
  format: 'pprof' | 'json' | 'speedscope' | 'folded' | 'cpuprofile' | 'jfr';
}

/** Decompresses gzip (every member) up to maxDecompressedBytes: a bomb stops there, in time and memory. */
export function gunzipBounded(b: Uint8Array, budget: ReadBudget): Buffer {
  const max = budget.limits.maxDecompressedBytes;
  try {
    return gunzipSync(b, { maxOutputLength: max, chunkSize: 1024 * 1024 });
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') budget.fail('maxDecompressedBytes', 'what the gzip-compressed file decompresses to');
    throw new ImportError(`the file is gzip-compressed but does not decompress: ${(e as Error).message}`);
  }
}

/** JSON text: our --json result, a .cpuprofile or speedscope (which says why when it is none). */
function loadJson(text: string, name: string, budget: ReadBudget): LoadedProfile {
  const json = parseJson(text, budget) as { tracer?: unknown; stacks?: unknown } | null;
  if (json?.tracer === 'profile' && Array.isArray(json.stacks)) {
    const result = checkResult(json, budget);
    return { flame: fromProfileResult(result, { name, budget }), result, format: 'json' };
  }
  if (isCpuProfile(json)) return { flame: fromCpuProfile(json, name, budget), format: 'cpuprofile' };
  return { flame: fromSpeedscope(json, name, budget), format: 'speedscope' };
}

/**
 * Any profile file's bytes as a flame profile (and our result document where the format carries
 * one), within `limits`: past one, a LimitError names it and the file.
 */
export function loadProfileBytes(bytes: Uint8Array, name: string, limits: ProfileLimits = PROFILE_LIMITS): LoadedProfile {
  const budget = new ReadBudget(name, limits);
  budget.check('maxFileBytes', bytes.length, 'the size of the file');
  const b = isGzip(bytes) ? gunzipBounded(bytes, budget) : bytes;
  if (b.length === 0) throw new ImportError('the file is empty');
  // a Java Flight Recording: its CPU samples (model/jfr/profile.ts), so Compare and profile-diff take .jfr too
  if (isJfr(b)) {
    const jfr = new JfrProfileBuilder(CPU_EVENTS, name);
    readJfrBytes(b, jfr);
    const result = jfr.result();
    return { flame: fromProfileResult(result, { name, budget }), result, format: 'jfr' };
  }
  if (!looksLikeText(b)) {
    const result = fromPprof(b, budget);
    return { flame: fromProfileResult(result, { name, budget }), result, format: 'pprof' };
  }
  const text = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  const t = text.trimStart();
  if (t.startsWith('{')) return loadJson(t, name, budget);
  return { flame: fromFolded(text, name, budget), format: 'folded' };
}
