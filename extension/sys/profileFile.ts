// Reading and writing profile files in node (the CLI and the extension host): pprof is gzipped
// profile.proto; folded stacks, speedscope and our `profile --json` are text. The format is
// told by the bytes, not the file name, so a renamed file still opens.
import { gunzipSync, gzipSync } from 'node:zlib';
import type { ProfileResult } from '../protocol/profile';
import { fromPprof, toPprof, type PprofOptions } from '../model/pprof';
import { fromProfileResult, type FlameProfile } from '../model/flamegraph/profileData';
import { ImportError, importProfile } from '../model/flamegraph/formats';

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
  format: 'pprof' | 'json' | 'speedscope' | 'folded';
}

/** Any profile file's bytes as a flame profile (and our result document where the format carries one). */
export function loadProfileBytes(bytes: Uint8Array, name: string): LoadedProfile {
  let b = bytes;
  if (isGzip(b)) {
    try {
      b = gunzipSync(b);
    } catch (e) {
      throw new ImportError(`the file is gzip-compressed but does not decompress: ${(e as Error).message}`);
    }
  }
  if (b.length === 0) throw new ImportError('the file is empty');
  if (!looksLikeText(b)) {
    const result = fromPprof(b);
    return { flame: fromProfileResult(result, { name }), result, format: 'pprof' };
  }
  const text = Buffer.from(b).toString('utf8');
  const t = text.trimStart();
  if (t.startsWith('{')) {
    let json: { tracer?: unknown; stacks?: unknown } | undefined;
    try {
      json = JSON.parse(t);
    } catch {
      /* importProfile says why */
    }
    if (json?.tracer === 'profile' && Array.isArray(json.stacks)) {
      const result = json as unknown as ProfileResult;
      return { flame: fromProfileResult(result, { name }), result, format: 'json' };
    }
    return { flame: importProfile(text, name), format: 'speedscope' };
  }
  return { flame: importProfile(text, name), format: 'folded' };
}
