// A running container's cgroup v2 directory, by the container's name or id (prefix), for tracers
// that count per scheduler event and so are filtered in the kernel by cgroup (bpf/cgroup_filter.bpf.h):
// the running processes are looked at once, each one's container named by containerOf().
import fs from 'node:fs';
import path from 'node:path';
import { inputError, unsuitableError } from '../../protocol/errors';
import { cgroup2Mount, cgroupOfPid } from '../cgroup';
import { containerOf, type ContainerInfo } from './container';
import { containerLabel } from './targetLabel';
import type { ContainerListing } from '../../protocol/protocol';

export interface ContainerCgroup {
  container: ContainerInfo;
  /** "podman: my-app, image debian:bookworm" */
  label: string;
  /** below the cgroup2 root: the directory that names the container (its processes may sit below it) */
  cgroupPath: string;
  /** the low 32 bits of the cgroup id (the directory's inode), and its depth below the root */
  id32: number;
  level: number;
}

/** What --container takes: a name, or an id (at least 4 hex digits of its start). */
export const CONTAINER_QUERY = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/;

function matches(c: ContainerInfo, query: string): boolean {
  return c.name === query || (/^[0-9a-f]{4,64}$/.test(query) && c.id.startsWith(query)) || (c.pod !== undefined && `${c.pod}/${c.name}` === query);
}

/** The cgroup path cut after the segment that names the container's id. */
export function containerDir(cgroupPath: string, id: string): string | undefined {
  const segs = cgroupPath.split('/').filter(Boolean);
  const i = segs.findIndex((s) => s.includes(id));
  return i < 0 ? undefined : `/${segs.slice(0, i + 1).join('/')}`;
}

/** A running container: its names, its cgroup v2 directory (when it has one) and how many processes it runs. */
export interface RunningContainer {
  c: ContainerInfo;
  dir?: string;
  processes: number;
}

/** The containers running now, each once (the processes are looked at once, each one's container named). */
export function runningContainers(proc = '/proc'): RunningContainer[] {
  const seen = new Map<string, RunningContainer>();
  for (const e of fs.readdirSync(proc)) {
    if (!/^\d+$/.test(e)) continue;
    const c = containerOf(Number(e));
    if (!c) continue;
    const known = seen.get(c.id);
    if (known) {
      known.processes++;
      continue;
    }
    const cg = cgroupOfPid(Number(e));
    seen.set(c.id, { c, dir: cg ? containerDir(cg, c.id) : undefined, processes: 1 });
  }
  return [...seen.values()];
}

/** The running containers a container filter can select (those with a cgroup v2 directory), named as pickers show them. */
export function listContainers(proc = '/proc'): ContainerListing[] {
  if (!cgroup2Mount()) throw unsuitableError('no cgroup v2 file system is mounted here: a container is selected by its cgroup v2 directory');
  return runningContainers(proc)
    .filter((x) => x.dir !== undefined)
    .map((x) => ({ container: x.c, label: containerLabel(x.c), processes: x.processes }))
    .sort((a, b) => a.label.localeCompare(b.label));
}

/** The running container `query` names, with its cgroup; a clear error when none or several do. */
export function containerCgroup(query: string, proc = '/proc'): ContainerCgroup {
  if (!CONTAINER_QUERY.test(query)) throw inputError(`--container takes a container's name or id, not "${query.slice(0, 80)}"`);
  const root = cgroup2Mount();
  if (!root) throw unsuitableError('no cgroup v2 file system is mounted here: a container is selected by its cgroup v2 directory');
  const running = runningContainers(proc);
  const hits = running.filter((x) => matches(x.c, query));
  const known = () => running.map((x) => x.c.name ?? x.c.id.slice(0, 12)).slice(0, 20).join(', ') || 'none';
  if (hits.length === 0) throw inputError(`no running container is named "${query}" or has an id starting with it (running: ${known()})`);
  if (hits.length > 1) throw inputError(`"${query}" names ${hits.length} running containers (${hits.map((x) => containerLabel(x.c)).join('; ')}): give more of the id`);
  const { c, dir } = hits[0];
  if (!dir) throw unsuitableError(`container ${containerLabel(c)} has no cgroup v2 directory of its own (a cgroup v1-only host?)`);
  const st = fs.statSync(path.join(root, dir), { bigint: true });
  return { container: c, label: containerLabel(c), cgroupPath: dir, id32: Number(st.ino & 0xffffffffn), level: dir.split('/').filter(Boolean).length };
}
