// The "Profile CPU" picker's measure step: CPU samples (the default), where threads wait
// (off-CPU time by stack and state), or wall clock (both, every thread). Offered as one item in
// the target list ("Measure: …"), so a CPU profile still takes one pick. Used by ./profile.ts.
import * as vscode from 'vscode';
import type { ProfileEvent } from '../../../protocol/profile';

export const EVENT_LABEL: Record<ProfileEvent, string> = { cpu: 'CPU', offcpu: 'Where threads wait (off-CPU)', wall: 'Wall clock', lock: 'Java lock waits', vthread: 'Virtual threads: where they wait' };

interface EventItem extends vscode.QuickPickItem {
  event: ProfileEvent;
}

export function eventItems(): EventItem[] {
  return [
    { event: 'cpu', label: 'CPU', detail: 'Sampled on-CPU stacks: where the CPU time goes.' },
    { event: 'offcpu', label: EVENT_LABEL.offcpu, detail: 'Exact time each thread spent off CPU, by stack and why: sleeping, I/O, lock (futex), preempted.' },
    { event: 'wall', label: EVENT_LABEL.wall, detail: 'On-CPU samples and off-CPU time of every thread in one flame graph, coloured by state.' },
  ];
}

/** The target list's item that changes what is measured. */
export function eventChangeItem(event: ProfileEvent): vscode.QuickPickItem & { changeEvent: true } {
  return { label: `$(watch) Measure: ${EVENT_LABEL[event]}`, description: 'change to off-CPU or wall clock…', changeEvent: true, alwaysShow: true };
}

/** Asks; undefined when dismissed. */
export async function pickEvent(current: ProfileEvent): Promise<ProfileEvent | undefined> {
  const items = eventItems();
  const pick = await vscode.window.showQuickPick([items.find((i) => i.event === current)!, ...items.filter((i) => i.event !== current)], { title: 'Profile: what to measure' });
  return pick?.event;
}
