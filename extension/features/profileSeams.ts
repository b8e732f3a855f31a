// Seams to the profile features that land separately (issue 18's other half): comparing two
// profiles (profileDiff.ts) and reading pprof (profile.proto, gzipped). The Sessions view's
// "Compare With…" and the `.pb.gz` editor call these; when those modules are in the tree each
// function becomes a one-line re-export.
import * as vscode from 'vscode';
import type { FlameProfile } from '../../webview/flamegraph/profileData';

/** Opens the differential flame graph of `next` against `base`. */
export async function compareProfiles(base: FlameProfile, next: FlameProfile): Promise<void> {
  void base;
  void next;
  void vscode.window.showInformationMessage('eBPF Studio: comparing profiles needs the differential flame graph, which this build does not include yet.');
}

/** A pprof profile (gzipped profile.proto) as a flame profile; throws with the cause when it cannot. */
export async function importPprof(bytes: Uint8Array, name: string): Promise<FlameProfile> {
  void bytes;
  throw new Error(`${name} is a pprof profile; this build of eBPF Studio cannot read pprof yet. Convert it with \`go tool pprof -raw\` or open a folded or speedscope file.`);
}
