// Which part of a JVM a thread belongs to, from its name (the kernel's 15-character comm):
// the application's own threads, or one of HotSpot's service-thread groups (GC workers of every
// collector, the VM thread, JIT compilers, and the rest: signal dispatch, reference handling,
// finalizer, service and attach threads...). The JVM timeline lanes and the flame graph's
// grouping of wall-clock and off-CPU profiles both use it. Pure.
import type { ThreadGroup } from '../protocol/jvm';

export const THREAD_GROUPS: ThreadGroup[] = ['application', 'gc', 'vm', 'compiler', 'jvm'];
export const GROUP_LABEL: Record<ThreadGroup, string> = { application: 'Application threads', gc: 'GC threads', vm: 'VM thread', compiler: 'Compiler threads', jvm: 'Other JVM threads' };

const GC_THREAD = /^(GC Thread|ParGC Thread|G1 |Z[A-Z][a-z]|Shenandoah|Shen|Conc(urrent)? ?(GC|Mark)|VM Periodic GC)/;
const COMPILER_THREAD = /^(C1 CompilerThre|C2 CompilerThre|CompilerThread|Sweeper thread|JVMCI)/;
const JVM_THREAD = /^(Signal Dispatch|Finalizer|Reference Handl|Service Thread|Monitor Deflati|Notification Th|Common-Cleaner|Attach Listener|VM Periodic Tas|JFR |Process Reaper|process reaper)/;

export function threadGroup(comm: string): ThreadGroup {
  if (comm === 'VM Thread') return 'vm';
  if (GC_THREAD.test(comm)) return 'gc';
  if (COMPILER_THREAD.test(comm)) return 'compiler';
  if (JVM_THREAD.test(comm)) return 'jvm';
  return 'application';
}

/** Threads only HotSpot names so: one of them in a process marks it as a JVM. */
export function isHotspotThreadName(comm: string): boolean {
  return comm === 'VM Thread' || /^(C[12] CompilerThre|Signal Dispatch|Reference Handl|VM Periodic Tas)/.test(comm);
}
