// Which container a process runs in, named the way its runtime names it: the container id from the
// process's cgroup path, then the name, image, pod and namespace from the files the runtime itself
// keeps (never by running `podman inspect` or `crictl` per process: a scrape or a picker would fork
// once per JVM, and the tools need not be installed where the agent runs).
//
// Cgroup paths, v2 (the "0::" line) or hybrid/v1 (each controller's line, name=systemd first):
//   podman     .../libpod-ID.scope[/container], /libpod_parent/libpod-ID (cgroupfs manager)
//   docker     .../docker-ID.scope, /docker/ID (cgroupfs driver)
//   containerd .../kubepods-*-pod<uid>.slice/cri-containerd-ID.scope
//   CRI-O      .../kubepods-*-pod<uid>.slice/crio-ID.scope
//   any CRI    /kubepods/<qos>/pod<uid>/ID (cgroupfs driver: the runtime is found by its files)
// The runtimes' conmon and shim cgroups (libpod-conmon-ID, crio-conmon-ID) are not containers.
// Paths that name no id by their form are a containerd task's when runc's state.json for it says so:
//   containerd /NS/ID (ctr run, cgroupfs), .../NS-ID.scope (ctr --runc-systemd-cgroup): ids are any
//              name containerd allows, found in /run/containerd/runc/NS/ID/state.json; the image
//              from containerd's metadata database (boltRead.ts) under the root the bundle links to
// A rootless podman container has no cgroup of its own on cgroup v1 (and an id root's stores do not
// know on v2): it is found from its conmon parent and named from its user's store (rootlessPodman.ts).
//
// Metadata, read as root, first at the path itself (a DaemonSet mounts the runtime's state there
// read-only), then through /proc/1/root (the host's root seen from a privileged container sharing
// the host's pid namespace):
//   podman     <graphroot>/overlay-containers/containers.json: names, metadata.image-name
//   docker     /var/lib/docker/containers/ID/config.v2.json: Name, Config.Image, Config.Labels
//   containerd /run/containerd/io.containerd.runtime.v2.task/<ns>/ID/config.json: the OCI bundle's
//              annotations io.kubernetes.cri.{container-name,sandbox-name,sandbox-namespace,image-name}
//   CRI-O      /run/containers/storage/overlay-containers/ID/userdata/config.json: annotations
//              io.kubernetes.{container.name,pod.name,pod.namespace}, io.kubernetes.cri-o.ImageName
//   any runc   /run/runc/ID/state.json (and containerd's, docker's runc roots): config.labels
//              "bundle=DIR", whose config.json has the annotations above
// Every file is opened without blocking, must be a regular root-owned file within a size limit,
// and is parsed in a try: a missing or odd file leaves the label out, never fails the caller.
import fs from 'node:fs';
import path from 'node:path';
import { readOpened } from '../elf/fileCheck';
import { readUserOwnedFile, rootlessContainerOf } from './rootlessPodman';
import { boltValue } from './boltRead';

export type ContainerRuntime = 'podman' | 'docker' | 'containerd' | 'cri-o' | 'kubernetes' | 'container';

export interface ContainerInfo {
  runtime: ContainerRuntime;
  /** the full 64-hex-digit id */
  id: string;
  name?: string;
  image?: string;
  pod?: string;
  namespace?: string;
}

/** What a cgroup path alone says: the runtime (by its naming), the id, the Kubernetes pod's uid. */
export interface CgroupContainer {
  runtime: ContainerRuntime;
  id: string;
  podUid?: string;
}

export const CONTAINER_LIMITS = {
  /** podman's containers.json holds ~1 KiB per container: 16 MiB is >10,000 containers */
  maxIndexBytes: 16 << 20,
  /** an OCI config.json, a runc state.json, docker's config.v2.json: tens of KiB in practice */
  maxFileBytes: 4 << 20,
  /** a label value: Kubernetes names are at most 253 characters, image references ~255 */
  maxLabelChars: 256,
  /** ids remembered (one entry per container seen) */
  maxCached: 4096,
  /** a container whose files were not found is looked up again after this long */
  retryMs: 30_000,
} as const;

const HEX64 = '([0-9a-f]{64})';
const SEGMENTS: [RegExp, ContainerRuntime][] = [
  [new RegExp(`^libpod-${HEX64}(?:\\.scope)?$`), 'podman'],
  [new RegExp(`^docker-${HEX64}\\.scope$`), 'docker'],
  [new RegExp(`^cri-containerd-${HEX64}\\.scope$`), 'containerd'],
  [new RegExp(`^crio-${HEX64}\\.scope$`), 'cri-o'],
];
const BARE = new RegExp(`^${HEX64}$`);
const POD_UID = /^(?:kubepods-(?:[a-z]+-)?)?pod([0-9a-f_-]{32,36})(?:\.slice)?$/;

/** The container one cgroup path names (the innermost one), or undefined. */
export function containerOfCgroupPath(cgroupPath: string): CgroupContainer | undefined {
  const segs = cgroupPath.split('/').filter(Boolean);
  let found: CgroupContainer | undefined;
  let podUid: string | undefined;
  segs.forEach((seg, i) => {
    const pod = POD_UID.exec(seg);
    if (pod) podUid = pod[1].replace(/_/g, '-');
    for (const [re, runtime] of SEGMENTS) {
      const m = re.exec(seg);
      if (m) found = { runtime, id: m[1] };
    }
    const bare = BARE.exec(seg);
    if (bare) {
      const parent = segs[i - 1] ?? '';
      const runtime: ContainerRuntime = parent === 'docker' ? 'docker' : segs.some((s) => s.startsWith('kubepods')) ? 'kubernetes' : 'container';
      found = { runtime, id: bare[1] };
    }
  });
  if (found && podUid) found.podUid = podUid;
  return found;
}

/**
 * The container a /proc/PID/cgroup text names: from the v2 line, else from the v1 lines
 * (name=systemd first: the hierarchy every runtime places its processes in).
 */
export function parseContainerCgroup(procCgroup: string): CgroupContainer | undefined {
  const lines = procCgroup.split('\n').filter(Boolean).map((l) => {
    const a = l.indexOf(':');
    const b = l.indexOf(':', a + 1);
    return { controllers: l.slice(a + 1, b), path: l.slice(b + 1).replace(/ \(deleted\)$/, '') };
  });
  const rank = (c: string) => (c === '' ? 0 : c === 'name=systemd' ? 1 : 2);
  lines.sort((x, y) => rank(x.controllers) - rank(y.controllers));
  for (const l of lines) {
    const c = containerOfCgroupPath(l.path);
    if (c) return c;
  }
  return undefined;
}

/** A root-owned regular file's text, or undefined; never blocks on a FIFO or reads past `max`. */
export function readMetadataFile(file: string, max: number = CONTAINER_LIMITS.maxFileBytes): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== 0 || st.size > max) return undefined;
    return readOpened(fd, st.size).toString('utf8');
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** A label value as the runtime wrote it, without control characters, cut to a bounded length. */
function clean(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const s = v.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, CONTAINER_LIMITS.maxLabelChars);
  return s || undefined;
}

type Names = Pick<ContainerInfo, 'name' | 'image' | 'pod' | 'namespace'>;

/** The names a CRI runtime (containerd, CRI-O) or dockershim wrote into a container's annotations or labels. */
export function namesFromAnnotations(a: Record<string, unknown>): Names {
  const pick = (...keys: string[]) => keys.map((k) => clean(a[k])).find((v) => v !== undefined);
  return {
    name: pick('io.kubernetes.cri.container-name', 'io.kubernetes.container.name'),
    image: pick('io.kubernetes.cri.image-name', 'io.kubernetes.cri-o.ImageName'),
    pod: pick('io.kubernetes.cri.sandbox-name', 'io.kubernetes.pod.name'),
    namespace: pick('io.kubernetes.cri.sandbox-namespace', 'io.kubernetes.pod.namespace'),
  };
}

/** podman's names for an id from containers-storage's containers.json text. */
export function namesFromContainersJson(text: string | undefined, id: string): Names | undefined {
  const list = parseJson(text);
  if (!Array.isArray(list)) return undefined;
  const entry = obj(list.find((c) => obj(c).id === id));
  if (entry.id !== id) return undefined;
  const meta = obj(parseJson(typeof entry.metadata === 'string' ? entry.metadata : undefined));
  const names = Array.isArray(entry.names) ? entry.names : [];
  return { name: clean(meta.name) ?? clean(names[0]), image: clean(meta['image-name']) };
}

/** docker's names from /var/lib/docker/containers/ID/config.v2.json text. */
export function namesFromDockerConfig(text: string | undefined): Names | undefined {
  const c = obj(parseJson(text));
  if (!Object.keys(c).length) return undefined;
  const config = obj(c.Config);
  const k8s = namesFromAnnotations(obj(config.Labels));
  return { ...k8s, name: k8s.name ?? clean(typeof c.Name === 'string' ? c.Name.replace(/^\//, '') : undefined), image: clean(config.Image) ?? k8s.image };
}

/** The annotations of an OCI bundle's config.json text. */
function bundleAnnotations(text: string | undefined): Record<string, unknown> | undefined {
  const c = parseJson(text);
  return c === undefined ? undefined : obj(obj(c).annotations);
}

/** The bundle directory a runc state.json names (config.labels "bundle=DIR"). */
export function bundleOfRuncState(text: string | undefined): string | undefined {
  const labels = obj(obj(parseJson(text)).config).labels;
  if (!Array.isArray(labels)) return undefined;
  const b = labels.find((l) => typeof l === 'string' && l.startsWith('bundle='));
  return typeof b === 'string' && b.length > 8 && b[7] === '/' ? b.slice(7) : undefined;
}

const RUNC_ROOTS = ['/run/runc', '/run/containerd/runc/k8s.io', '/run/docker/runtime-runc/moby', '/run/containerd/runc/moby', '/run/containerd/runc/default'];
const PODMAN_STORES = ['/var/lib/containers/storage/overlay-containers', '/var/lib/containers/storage/vfs-containers', '/var/lib/containers/storage/btrfs-containers'];
const CONTAINERD_TASKS = ['/run/containerd/io.containerd.runtime.v2.task/k8s.io', '/run/containerd/io.containerd.runtime.v2.task/moby', '/run/containerd/io.containerd.runtime.v2.task/default'];
const CRIO_STORE = '/run/containers/storage/overlay-containers';

/** Where each runtime's files are looked for: what a DaemonSet must mount (read-only) for names. */
export const METADATA_DIRS: Record<'podman' | 'docker' | 'containerd' | 'cri-o' | 'runc', string[]> = {
  podman: PODMAN_STORES,
  docker: ['/var/lib/docker/containers'],
  containerd: CONTAINERD_TASKS,
  'cri-o': [CRIO_STORE],
  runc: RUNC_ROOTS,
};

/** Reads the runtimes' files under one root ("" or "/proc/1/root"); keeps parsed containers.json while it is unchanged. */
export class ContainerLookup {
  private readonly cache = new Map<string, { info: ContainerInfo; complete: boolean; at: number }>();
  /** cgroup paths and processes that named no container (each process outside one has its own cgroup path) */
  private readonly misses = new Map<string, { info: ContainerInfo | undefined; complete: boolean; at: number }>();
  private readonly indexes = new Map<string, { key: string; text: string | undefined }>();

  constructor(
    readonly roots: string[] = ['', '/proc/1/root'],
    private readonly readCgroup = readProcCgroup,
  ) {}

  /** The container of a process, or undefined when it runs in none (or is gone). */
  of(pid: number, now = Date.now()): ContainerInfo | undefined {
    const text = this.readCgroup(pid);
    if (text === undefined) return undefined;
    const c = parseContainerCgroup(text);
    const info = c && this.describe(c, now);
    if (info?.name) return info;
    // a rootless container: its cgroup (v2) names an id root's stores do not know, or (v1) none
    return this.rootless(pid, now) ?? info ?? this.containerdTask(text, now);
  }

  /** A task `ctr run` (or any containerd client) started, by its cgroup path and containerd's runc state. */
  private containerdTask(procCgroup: string, now: number): ContainerInfo | undefined {
    const cg = cgroupPathOf(procCgroup);
    if (!cg || cg === '/') return undefined;
    return this.cached(`containerd:${cg}`, now, () => {
      for (const root of this.roots) {
        const at = (p: string) => path.join(root || '/', p);
        for (const { ns, id } of containerdCandidates(cg, () => listDir(at(CONTAINERD_RUNC)))) {
          const found = containerdNames(at, cg, ns, id);
          if (found) return found;
        }
      }
      return undefined;
    });
  }

  /** A rootless podman container, named from its own user's store (see rootlessPodman.ts for why that is safe). */
  private rootless(pid: number, now: number): ContainerInfo | undefined {
    const r = rootlessContainerOf(pid);
    if (!r) return undefined;
    return this.cached(`rootless:${r.uid}:${r.id}`, now, () => {
      const text = this.roots.map((root) => readUserOwnedFile(r.index, r.uid, CONTAINER_LIMITS.maxIndexBytes, root || '/')).find((t) => t !== undefined);
      const names = namesFromContainersJson(text, r.id);
      return { runtime: 'podman', id: r.id, ...(names?.name && { name: names.name }), ...(names?.image && { image: names.image }) };
    });
  }

  /** `find` once per key: kept when it named a container, looked up again after retryMs when not. */
  private cached(key: string, now: number, find: () => ContainerInfo | undefined): ContainerInfo | undefined {
    const hit = this.misses.get(key) ?? this.cache.get(key);
    if (hit && (hit.complete || now - hit.at < CONTAINER_LIMITS.retryMs)) return hit.info;
    const info = find();
    for (const m of [this.cache, this.misses]) if (m.size >= CONTAINER_LIMITS.maxCached) m.clear();
    if (info) this.cache.set(key, { info, complete: info.name !== undefined, at: now });
    else this.misses.set(key, { info, complete: false, at: now });
    return info;
  }

  /** Names a container found in a cgroup path; cached per id (a container's names do not change). */
  describe(c: CgroupContainer, now = Date.now()): ContainerInfo {
    const hit = this.cache.get(c.id);
    if (hit && (hit.complete || now - hit.at < CONTAINER_LIMITS.retryMs)) return hit.info;
    const found = this.lookup(c);
    const info: ContainerInfo = { runtime: found?.runtime ?? c.runtime, id: c.id };
    for (const k of ['name', 'image', 'pod', 'namespace'] as const) if (found?.names[k]) info[k] = found.names[k];
    if (this.cache.size >= CONTAINER_LIMITS.maxCached) this.cache.clear();
    this.cache.set(c.id, { info, complete: found !== undefined, at: now });
    return info;
  }

  private lookup(c: CgroupContainer): { runtime: ContainerRuntime; names: Names } | undefined {
    for (const root of this.roots) {
      const at = (p: string) => path.join(root || '/', p);
      const tries: [ContainerRuntime, () => Names | undefined][] = [];
      if (c.runtime === 'podman' || c.runtime === 'container') tries.push(['podman', () => this.podman(at, c.id)]);
      if (c.runtime === 'docker' || c.runtime === 'container') tries.push(['docker', () => namesFromDockerConfig(readMetadataFile(at(`/var/lib/docker/containers/${c.id}/config.v2.json`)))]);
      if (c.runtime !== 'podman' && c.runtime !== 'cri-o') tries.push(['containerd', () => this.bundle(at, CONTAINERD_TASKS.map((d) => `${d}/${c.id}/config.json`))]);
      if (c.runtime !== 'podman' && c.runtime !== 'containerd') tries.push(['cri-o', () => this.bundle(at, [`${CRIO_STORE}/${c.id}/userdata/config.json`])]);
      tries.push([c.runtime, () => this.runcBundle(at, c.id)]);
      for (const [runtime, f] of tries) {
        const names = f();
        if (names) return { runtime: runtime === 'kubernetes' || runtime === 'container' ? c.runtime : runtime, names };
      }
    }
    return undefined;
  }

  private podman(at: (p: string) => string, id: string): Names | undefined {
    for (const store of PODMAN_STORES) {
      const names = namesFromContainersJson(this.index(at(`${store}/containers.json`)), id);
      if (names) return { ...namesFromAnnotations(bundleAnnotations(readMetadataFile(at(`${store}/${id}/userdata/config.json`))) ?? {}), ...names };
    }
    return undefined;
  }

  private bundle(at: (p: string) => string, files: string[]): Names | undefined {
    for (const f of files) {
      const a = bundleAnnotations(readMetadataFile(at(f)));
      if (a) return namesFromAnnotations(a);
    }
    return undefined;
  }

  private runcBundle(at: (p: string) => string, id: string): Names | undefined {
    for (const r of RUNC_ROOTS) {
      const bundle = bundleOfRuncState(readMetadataFile(at(`${r}/${id}/state.json`)));
      if (bundle) return namesFromAnnotations(bundleAnnotations(readMetadataFile(at(`${bundle}/config.json`))) ?? {});
    }
    return undefined;
  }

  /** containers.json, read again only when its size or modification time changed. */
  private index(file: string): string | undefined {
    let key: string;
    try {
      const st = fs.statSync(file);
      key = `${st.size}:${st.mtimeMs}:${st.ino}`;
    } catch {
      return undefined;
    }
    const known = this.indexes.get(file);
    if (known?.key === key) return known.text;
    const text = readMetadataFile(file, CONTAINER_LIMITS.maxIndexBytes);
    this.indexes.set(file, { key, text });
    return text;
  }
}

const CONTAINERD_RUNC = '/run/containerd/runc';
/** containerd's rule for namespaces and container ids: no "/" and no ".." can come through */
const CONTAINERD_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,74}[A-Za-z0-9])?$/;
const MAX_NAMESPACES = 64;

/** The cgroup path of a /proc/PID/cgroup text: the v2 line's, else name=systemd's. */
export function cgroupPathOf(procCgroup: string): string | undefined {
  const lines = procCgroup.split('\n');
  const pick = (prefix: string) => lines.find((l) => l.startsWith(prefix))?.slice(prefix.length);
  return pick('0::') || lines.map((l) => /^\d+:name=systemd:(.*)$/.exec(l)?.[1]).find((p) => p !== undefined);
}

/**
 * The (namespace, id) pairs a cgroup path may be a containerd task's, as containerd's runc shim
 * places them: cgroupfs "/NS/ID" (ctr's default, and nerdctl's), systemd ".../NS-ID.scope"
 * (ctr --runc-systemd-cgroup: "system.slice:NS:ID"), where the namespaces are those with a runc
 * state directory. Each pair is only a candidate: runc's state.json must name the same cgroup.
 */
export function containerdCandidates(cgroupPath: string, namespaces: () => string[]): { ns: string; id: string }[] {
  const segs = cgroupPath.split('/').filter(Boolean);
  const [ns, id] = segs.slice(-2);
  const out: { ns: string; id: string }[] = [];
  if (segs.length >= 2 && CONTAINERD_NAME.test(ns) && CONTAINERD_NAME.test(id)) out.push({ ns, id });
  const scope = /^(.+)\.scope$/.exec(segs[segs.length - 1] ?? '');
  if (scope) {
    for (const n of namespaces().filter((x) => CONTAINERD_NAME.test(x)).slice(0, MAX_NAMESPACES)) {
      const rest = scope[1].startsWith(`${n}-`) ? scope[1].slice(n.length + 1) : '';
      if (CONTAINERD_NAME.test(rest)) out.push({ ns: n, id: rest });
    }
  }
  return out;
}

function listDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * The image a containerd container was made from, as containerd's metadata database keeps it
 * (bucket v1/NS/containers/ID, key "image"): the database is under containerd's root, which the
 * bundle's root-owned "work" link names (ROOT/io.containerd.runtime.v2.task/NS/ID).
 */
function containerdImage(at: (p: string) => string, bundle: string, ns: string, id: string): string | undefined {
  let root = '/var/lib/containerd';
  try {
    const work = at(`${bundle}/work`);
    if (fs.lstatSync(work).uid === 0) {
      const m = /^(\/.+)\/io\.containerd\.runtime\.v2\.task\/([^/]+)\/([^/]+)$/.exec(fs.readlinkSync(work));
      if (m && m[2] === ns && m[3] === id && !m[1].split('/').includes('..')) root = m[1];
    }
  } catch {
    /* no link: containerd's default root */
  }
  let fd: number;
  try {
    fd = fs.openSync(at(`${root}/io.containerd.metadata.v1.bolt/meta.db`), fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== 0) return undefined;
    return clean(boltValue(fd, st.size, ['v1', ns, 'containers', id, 'image'])?.toString('utf8'));
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A containerd task's names from runc's state.json (root-owned, written by the shim's runc) when it
 * places the task in `cgroupPath`, and the annotations of the bundle it names: a CRI container's
 * Kubernetes names, else the id as its name and containerd's namespace; the image from the
 * annotations, else from containerd's metadata database.
 */
function containerdNames(at: (p: string) => string, cgroupPath: string, ns: string, id: string): ContainerInfo | undefined {
  const state = obj(parseJson(readMetadataFile(at(`${CONTAINERD_RUNC}/${ns}/${id}/state.json`))));
  if (state.id !== id) return undefined;
  const paths = Object.values(obj(state.cgroup_paths)).filter((p): p is string => typeof p === 'string');
  if (!paths.some((p) => p.endsWith(cgroupPath))) return undefined;
  const bundle = bundleOfRuncState(JSON.stringify(state));
  const names = bundle ? namesFromAnnotations(bundleAnnotations(readMetadataFile(at(`${bundle}/config.json`))) ?? {}) : {};
  const info: ContainerInfo = { runtime: 'containerd', id, name: names.name ?? id, namespace: names.namespace ?? ns };
  const image = names.image ?? (bundle ? containerdImage(at, bundle, ns, id) : undefined);
  if (image) info.image = image;
  if (names.pod) info.pod = names.pod;
  return info;
}

/** /proc/PID/cgroup: owned by the process's user and sized 0 by stat, so read as the kernel gives it (a few lines). */
function readProcCgroup(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return undefined;
  }
}

let shared: ContainerLookup | undefined;

/** The container a process runs in (runtime, id, and the names its runtime's files give), or undefined. */
export function containerOf(pid: number): ContainerInfo | undefined {
  shared ??= new ContainerLookup();
  return shared.of(pid);
}

/** The short id and name a picker shows: "name (podman 993c539891ae)" or "podman 993c539891ae". */
export function containerText(c: ContainerInfo): string {
  const short = `${c.runtime} ${c.id.slice(0, 12)}`;
  const where = c.pod ? `${c.namespace ? `${c.namespace}/` : ''}${c.pod}/` : '';
  return c.name ? `${where}${c.name} (${short}${c.image ? `, ${c.image}` : ''})` : short;
}
