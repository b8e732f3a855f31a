// Commands: ebpfStudio.compareProfiles ("Compare CPU Profiles…": picks a base and a new profile
// file, or takes two URIs, e.g. from the Explorer's multi-selection, and opens the differential
// flame graph: widths from the new profile, red/blue by the change of self share, and the
// biggest movers). Context keys: none. Other features (the Sessions view's "Compare With…")
// call compareProfiles(base, next) with URIs or in-memory profiles.
import path from 'node:path';
import * as vscode from 'vscode';
import type { ProfileResult } from '../../../protocol/profile';
import { fromProfileResult, type FlameProfile } from '../../../model/flamegraph/profileData';
import { diffSideLabels } from '../../../model/profileDiff';
import { errorText, showError } from '../../ui/errors';
import { openPanel, PROFILE_EXTENSIONS, PROFILE_FILTER_NAME } from './profile';
import { readProfileUri } from './readProfileUri';

/** A profile to compare: a file (any format Open CPU Profile reads) or one held in memory (a session: with when it started). */
export type CompareInput = vscode.Uri | { profile: FlameProfile | ProfileResult; label: string; startedAt?: string };

let extensionContext: vscode.ExtensionContext | undefined;

function isUri(x: unknown): x is vscode.Uri {
  return typeof x === 'object' && x !== null && typeof (x as vscode.Uri).fsPath === 'string' && typeof (x as vscode.Uri).scheme === 'string';
}

async function load(input: CompareInput): Promise<{ flame: FlameProfile; label: string; startedAt?: string }> {
  if (isUri(input)) {
    const label = path.basename(input.fsPath);
    try {
      return { flame: (await readProfileUri(input)).flame, label };
    } catch (e) {
      throw new Error(`cannot open ${input.fsPath} as a profile: ${errorText(e)}`);
    }
  }
  const p = input.profile;
  const flame = (p as ProfileResult).tracer === 'profile' ? fromProfileResult(p as ProfileResult, { name: input.label }) : (p as FlameProfile);
  return { flame, label: input.label, startedAt: input.startedAt };
}

/**
 * Opens the differential flame graph of base → next in a new panel. Resolves once the panel is
 * open; rejects (with the cause) when a profile cannot be read.
 */
export async function compareProfiles(base: CompareInput, next: CompareInput): Promise<void> {
  if (!extensionContext) throw new Error('eBPF Studio is not activated yet');
  const [b, n] = await Promise.all([load(base), load(next)]);
  const [baseTitle, nextTitle] = diffSideLabels(b, n);
  const title = `CPU diff: ${baseTitle} → ${nextTitle}`;
  const shown = openPanel(extensionContext, title);
  // Export from the diff panel writes the new profile, which gives the graph its widths.
  shown.profile = n.flame;
  shown.post({ type: 'diff', base: b.flame, next: n.flame, baseTitle, nextTitle, title });
}

async function pickFile(title: string): Promise<vscode.Uri | undefined> {
  const r = await vscode.window.showOpenDialog({ title, canSelectMany: false, filters: { [PROFILE_FILTER_NAME]: PROFILE_EXTENSIONS, 'All files': ['*'] } });
  return r?.[0];
}

export function activate(context: vscode.ExtensionContext): void {
  extensionContext = context;
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.compareProfiles', async (a?: unknown, b?: unknown) => {
      try {
        // From the Explorer: (clicked, [selected...]); from code: (base, next).
        let base: CompareInput | undefined;
        let next: CompareInput | undefined;
        if (Array.isArray(b) && b.length === 2 && b.every(isUri)) [base, next] = b as vscode.Uri[];
        else {
          base = isUri(a) || (a && typeof a === 'object' && 'profile' in a) ? (a as CompareInput) : undefined;
          next = isUri(b) || (b && typeof b === 'object' && 'profile' in b) ? (b as CompareInput) : undefined;
        }
        base ??= await pickFile('Compare CPU profiles: the base (before)');
        if (!base) return;
        next ??= await pickFile('Compare CPU profiles: the new profile (after)');
        if (!next) return;
        await compareProfiles(base, next);
      } catch (e) {
        showError(e);
      }
    }),
  );
}
