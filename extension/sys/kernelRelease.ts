// The running kernel's release, and whether it is at least a given version: for features that
// need a kernel newer than the BPF basics (checked before loading, so the user is told which
// kernel is needed instead of reading a verifier message about an unknown helper).
import os from 'node:os';

/** "6.1.0-18-amd64" → [6, 1]; undefined when the release does not start with major.minor. */
export function releaseVersion(release: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)/.exec(release);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** True when `release` is at least major.minor; an unparsable release is given the benefit of the doubt (the load then says what is missing). */
export function releaseAtLeast(release: string, major: number, minor: number): boolean {
  const v = releaseVersion(release);
  if (!v) return true;
  return v[0] > major || (v[0] === major && v[1] >= minor);
}

export function kernelRelease(): string {
  return os.release();
}
