// Which JVMs the agent covers: by main class (jvm.mainClasses) and by container (jvm.containers),
// both when both are given. A container entry is either
//  - a container id or a prefix of one (12 to 64 hex digits, as `docker ps`, `podman ps` and
//    `crictl ps` show them): it matches a JVM whose cgroup v2 path has a segment naming that
//    container, the way docker (docker-ID.scope, or /docker/ID with the cgroupfs driver), podman
//    (libpod-ID.scope, also .../libpod-ID.scope/container), containerd and CRI-O under Kubernetes
//    (cri-containerd-ID.scope, crio-ID.scope, or /kubepods/.../podUID/ID) name their cgroups;
//  - a cgroup v2 path pattern, starting with "/": it matches a JVM whose cgroup is that path or
//    lies below it; "*" stands for any characters within one path segment, "**" for any number
//    of segments (systemd-nspawn: "/machine.slice/systemd-nspawn@web.service"; every pod of a
//    Kubernetes QoS class: "/kubepods.slice/kubepods-burstable.slice").
// Pure: the cgroup path is read by the caller (sys/cgroup.ts, cgroupOfPid).
import type { ContainerInfo } from '../sys/proc/container';

/** A container id in one cgroup path segment: 64 hex digits, alone or after a runtime's prefix. */
const ID_SEGMENT = /(?:^|[^0-9a-f])([0-9a-f]{64})(?:\.scope)?$/;

/** The container ids a cgroup path names, outermost first. */
export function containerIds(cgroupPath: string): string[] {
  const ids: string[] = [];
  for (const seg of cgroupPath.split('/')) {
    const m = ID_SEGMENT.exec(seg);
    if (m) ids.push(m[1]);
  }
  return ids;
}

/** What a jvm.containers entry is, or undefined when it is neither form. */
export function containerEntryKind(entry: string): 'id' | 'path' | undefined {
  if (entry.startsWith('/')) return 'path';
  if (/^[0-9a-f]{12,64}$/.test(entry)) return 'id';
  return undefined;
}

/**
 * A path pattern as a regular expression matching the path and everything below it. Written here:
 * only "*" and "**" are meant (no braces, classes or negation a glob library would also read into
 * a cgroup name such as "systemd-nspawn@web.service"), and Node 20's path.matchesGlob is experimental.
 */
function pathPattern(pattern: string): RegExp {
  const p = pattern.length > 1 ? pattern.replace(/\/+$/, '') : '';
  let re = '';
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '*' && p[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (p[i] === '*') re += '[^/]*';
    else re += p[i].replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}(?:/.*)?$`);
}

export class JvmSelector {
  private readonly ids: string[];
  private readonly paths: RegExp[];

  constructor(
    readonly mainClasses?: string[],
    readonly containers?: string[],
  ) {
    this.ids = (containers ?? []).filter((c) => containerEntryKind(c) === 'id');
    this.paths = (containers ?? []).filter((c) => containerEntryKind(c) === 'path').map(pathPattern);
  }

  /** Whether every JVM (and every process, in profiles) is covered. */
  get all(): boolean {
    return !this.mainClasses && !this.containers;
  }

  /** jvm.mainClasses (none: every JVM) names this main class (or -jar file). */
  coversMain(main: string): boolean {
    const mains = this.mainClasses;
    return !mains || mains.some((m) => m === main || main.endsWith(`/${m}`) || main.endsWith(`.${m}`));
  }

  /**
   * jvm.containers (none: everywhere) matches this cgroup v2 path, or the id of the container the
   * process runs in (sys/proc/container.ts: also from the v1 lines of a hybrid machine, where the
   * v2 path can be "/"); an unknown path and no id match no entry.
   */
  coversCgroup(cgroupPath: string | undefined, containerId?: string): boolean {
    if (!this.containers) return true;
    if (cgroupPath !== undefined && this.paths.some((re) => re.test(cgroupPath))) return true;
    const ids = [...(cgroupPath === undefined ? [] : containerIds(cgroupPath)), ...(containerId ? [containerId] : [])];
    return this.ids.some((want) => ids.some((id) => id.startsWith(want)));
  }

  covers(main: string, cgroupPath: string | undefined, containerId?: string): boolean {
    return this.coversMain(main) && this.coversCgroup(cgroupPath, containerId);
  }
}

/** The container label of a JVM: the short (12 digit) id of the innermost container, if any. */
export function containerLabel(cgroupPath: string | undefined): string | undefined {
  const ids = cgroupPath ? containerIds(cgroupPath) : [];
  return ids.length ? ids[ids.length - 1].slice(0, 12) : undefined;
}

/**
 * The container labels of a JVM's series, from its runtime's files (sys/proc/container.ts):
 * `container` (the runtime's name for it, else the short id), `container_id` (the short id),
 * `image`, and under Kubernetes `pod` and `namespace`, each where the runtime recorded it.
 */
export function containerLabels(c: ContainerInfo | undefined): Record<string, string> {
  if (!c) return {};
  const short = c.id.slice(0, 12);
  const l: Record<string, string> = { container: c.name ?? short, container_id: short };
  if (c.image) l.image = c.image;
  if (c.pod) l.pod = c.pod;
  if (c.namespace) l.namespace = c.namespace;
  return l;
}
