// Where the Sessions view and the read-only editors reach the profile features of issue 18's other
// half: the differential flame graph (profileDiff.ts) and pprof import (shared/profileFile.ts).
import type { FlameProfile } from '../shared/flamegraph/profileData';
import { compareProfiles as openDiff } from './profileDiff';
import { loadProfileBytes } from '../shared/profileFile';

/** Opens the differential flame graph of `next` against `base`. */
export async function compareProfiles(base: FlameProfile, next: FlameProfile): Promise<void> {
  await openDiff({ profile: base, label: base.name || 'base' }, { profile: next, label: next.name || 'new' });
}

/** A pprof profile (gzipped profile.proto) as a flame profile; throws with the cause when it cannot. */
export async function importPprof(bytes: Uint8Array, name: string): Promise<FlameProfile> {
  return loadProfileBytes(bytes, name).flame;
}
