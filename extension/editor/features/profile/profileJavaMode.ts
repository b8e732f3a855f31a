// The "Profile CPU" picker's Java step: for a JVM target, how Java frames are had.
// "Java: full stacks (agent)" (the JVMTI agent, AsyncGetCallTrace) is the default for a JVM
// without -XX:+PreserveFramePointer; the frame-pointer + perf-map path is the default with it.
// No commands or context keys of its own: used by ./profile.ts.
import * as vscode from 'vscode';
import type { ProfileOptions } from '../../../protocol/profile';

export type JavaMode = NonNullable<ProfileOptions['java']>;

export interface JavaModeItem extends vscode.QuickPickItem {
  mode: JavaMode;
}

/** The choices in order, the default first. */
export function javaModeItems(preserveFramePointer: boolean): JavaModeItem[] {
  const agent: JavaModeItem = {
    mode: 'agent',
    label: 'Java: full stacks (agent)',
    description: preserveFramePointer ? '' : 'recommended',
    detail: 'Loads eBPF Studio\'s JVMTI agent into the running JVM (no restart): whole Java stacks with file:line, joined to native and kernel frames. The agent stays loaded, idle, after the profile.',
  };
  const perfmap: JavaModeItem = {
    mode: 'perfmap',
    label: 'Java: frame pointers + perf map',
    description: preserveFramePointer ? 'recommended' : 'stacks will be truncated',
    detail: preserveFramePointer
      ? 'Names JIT frames from the JVM\'s perf map; the JVM runs with -XX:+PreserveFramePointer, so stacks are whole.'
      : 'Names JIT frames from the JVM\'s perf map; without -XX:+PreserveFramePointer the callers of compiled methods are lost.',
  };
  return preserveFramePointer ? [perfmap, agent] : [agent, perfmap];
}

/** Not CPU: the JVM's Java allocations by stack (./profileAlloc.ts). */
const ALLOCATIONS = {
  mode: 'alloc' as const,
  label: 'Allocations',
  description: 'Java heap, bytes by stack',
  detail: 'Samples the JVM\'s Java allocations through the same agent (JVMTI heap sampling, JDK 11+): a flame graph of bytes allocated, the allocated class as the leaf.',
};

/** Asks; undefined when dismissed. */
export async function pickJavaMode(preserveFramePointer: boolean): Promise<JavaMode | 'alloc' | undefined> {
  const pick = await vscode.window.showQuickPick([...javaModeItems(preserveFramePointer), ALLOCATIONS], { title: 'Profile CPU: Java stacks' });
  return pick?.mode;
}
