// The container a run's target runs in, for result documents (`--json`) and saved sessions: the
// traced pid's (null when it runs on the host, so a reader can tell "on the host" from "not
// asked"), or the container a `--container` filter selected; nothing for a system-wide run.
import { containerOf, type ContainerInfo } from './container';
import { containerCgroup } from './containerCgroup';

/** What decides it: the options' pid, a launched command's pid, a container filter. */
interface TargetOptions {
  pid?: unknown;
  launch?: unknown;
  container?: unknown;
}

export interface ContainerLookups {
  ofPid(pid: number): ContainerInfo | undefined;
  byQuery(query: string): ContainerInfo | undefined;
}

const SYSTEM: ContainerLookups = {
  ofPid: containerOf,
  byQuery: (q) => {
    try {
      return containerCgroup(q).container;
    } catch {
      // the session resolved it a moment ago; a container gone since is named by nothing
      return undefined;
    }
  },
};

/** Read as the session starts (the target may exit before it ends); undefined: a system-wide run. */
export function targetContainer(options: unknown, targets: readonly number[], look: ContainerLookups = SYSTEM): ContainerInfo | null | undefined {
  const o = (options && typeof options === 'object' ? options : {}) as TargetOptions;
  if (typeof o.container === 'string' && o.container) return look.byQuery(o.container) ?? null;
  const pid = typeof o.pid === 'number' && o.pid > 0 ? o.pid : o.launch && targets.length === 1 ? targets[0] : undefined;
  if (pid === undefined) return undefined;
  return look.ofPid(pid) ?? null;
}
