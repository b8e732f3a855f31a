// The "Profile CPU" picker's measure step: CPU samples (the default), where threads wait
// (off-CPU time by stack and state), wall clock (both, every thread), and for JVMs their Java
// lock waits (contended monitors and parks) or, JDK 21+, where their virtual threads wait.
// Offered as one item in the target list ("Measure: …"), so a CPU profile still takes one pick;
// the Java measures then list only JVMs (a JDK too old for virtual threads shown refused with the
// reason). Used by ./profile.ts.
import * as vscode from 'vscode';
import type { ProcessInfo } from '../../../protocol/protocol';
import type { ProfileEvent } from '../../../protocol/profile';

export const EVENT_LABEL: Record<ProfileEvent, string> = {
  cpu: 'CPU',
  offcpu: 'Where threads wait (off-CPU)',
  wall: 'Wall clock',
  lock: 'Java locks (contended monitors and parks)',
  vthread: 'Virtual threads (where they wait)',
};

/** The flame graph's title word per event ("Java locks: pid 42 (App)"). */
export const EVENT_TITLE: Record<ProfileEvent, string> = { cpu: 'CPU', offcpu: 'Off-CPU', wall: 'Wall clock', lock: 'Java locks', vthread: 'Virtual threads' };

/** The measures that read a JVM through the Java agent: their target must be a JVM. */
export const isJavaEvent = (e: ProfileEvent): e is 'lock' | 'vthread' => e === 'lock' || e === 'vthread';

/** The first JDK with virtual threads (and HotSpot's mount/unmount events for agents). */
export const VTHREAD_MIN_JDK = 21;

interface EventItem extends vscode.QuickPickItem {
  event: ProfileEvent;
  /** shown but not pickable now: why (said when picked) */
  refused?: string;
}

/**
 * The measures in order. `jvms`: the JDK feature releases of the JVMs running now (undefined
 * where unknown). The Java measures are listed only while a JVM runs; virtual threads, when
 * every running JVM is older than JDK 21, stay listed but refused with the reason.
 */
export function eventItems(jvms: (number | undefined)[] = []): EventItem[] {
  const items: EventItem[] = [
    { event: 'cpu', label: 'CPU', detail: 'Sampled on-CPU stacks: where the CPU time goes.' },
    { event: 'offcpu', label: EVENT_LABEL.offcpu, detail: 'Exact time each thread spent off CPU, by stack and why: sleeping, I/O, lock (futex), preempted.' },
    { event: 'wall', label: EVENT_LABEL.wall, detail: 'On-CPU samples and off-CPU time of every thread in one flame graph, coloured by state.' },
  ];
  if (!jvms.length) return items;
  const vthreadJvm = jvms.some((f) => f === undefined || f >= VTHREAD_MIN_JDK);
  const old = [...new Set(jvms)].sort((a, b) => (a ?? 0) - (b ?? 0)).join(', ');
  items.push(
    {
      event: 'lock',
      label: `$(coffee) ${EVENT_LABEL.lock}`,
      description: 'JVMs',
      detail: "Time a JVM's threads waited for contended synchronized monitors (exact) and java.util.concurrent parks (sampled), by the waiter's Java stack, with the lock and its holder as the leaf frame. Through the Java agent, no restart.",
    },
    vthreadJvm
      ? {
          event: 'vthread',
          label: `$(coffee) ${EVENT_LABEL.vthread}`,
          description: `JVMs on JDK ${VTHREAD_MIN_JDK}+`,
          detail: 'Time each virtual thread spent unmounted (parked, sleeping, on a lock or I/O), by its own Java stack; carrier threads are not counted. Through the Java agent, no restart.',
        }
      : {
          event: 'vthread',
          label: `$(circle-slash) ${EVENT_LABEL.vthread}`,
          description: `needs JDK ${VTHREAD_MIN_JDK}+`,
          detail: `Not available: the running JVMs are JDK ${old}, which have no virtual threads (JDK ${VTHREAD_MIN_JDK} or newer).`,
          refused: `${EVENT_LABEL.vthread} needs a JVM on JDK ${VTHREAD_MIN_JDK} or newer, and the running JVMs are JDK ${old}: start the program on JDK ${VTHREAD_MIN_JDK}+, or measure "${EVENT_LABEL.lock}"`,
        },
  );
  return items;
}

/**
 * Why the process `p` cannot be measured for `event` (shown on its row, and said if picked
 * anyway, e.g. by a typed pid); undefined when it can. Only the Java measures refuse.
 */
export function eventRefusal(event: ProfileEvent, p: Pick<ProcessInfo, 'pid' | 'comm' | 'jvm'>): string | undefined {
  if (!isJavaEvent(event)) return undefined;
  if (!p.jvm) return `pid ${p.pid} (${p.comm}) is not a JVM: ${EVENT_LABEL[event]} reads Java threads; for a native program's waits measure "${EVENT_LABEL.offcpu}" (its lock state is futex waits)`;
  const f = p.jvm.feature;
  if (event === 'vthread' && f !== undefined && f < VTHREAD_MIN_JDK)
    return `pid ${p.pid} runs JDK ${p.jvm.version ?? f}, which has no virtual threads (JDK ${VTHREAD_MIN_JDK} or newer): measure "${EVENT_LABEL.lock}" or "${EVENT_LABEL.offcpu}" instead`;
  return undefined;
}

/** The target list's item that changes what is measured. */
export function eventChangeItem(event: ProfileEvent): vscode.QuickPickItem & { changeEvent: true } {
  return { label: `$(watch) Measure: ${EVENT_LABEL[event]}`, description: 'change to off-CPU, wall clock or Java locks…', changeEvent: true, alwaysShow: true };
}

/** Asks; undefined when dismissed. `jvms` as for eventItems. */
export async function pickEvent(current: ProfileEvent, jvms: (number | undefined)[] = []): Promise<ProfileEvent | undefined> {
  const items = eventItems(jvms);
  const first = items.find((i) => i.event === current) ?? items[0];
  const pick = await vscode.window.showQuickPick([first, ...items.filter((i) => i !== first)], { title: 'Profile: what to measure' });
  if (pick?.refused) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${pick.refused}`);
    return current;
  }
  return pick?.event;
}
