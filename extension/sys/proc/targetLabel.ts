// A pid as reports and pickers name it: beside the number, the container it runs in (runtime,
// name or short id, image), since a pid alone means little to someone whose program runs in a
// container ("pid 1234 (podman: my-app, image debian:bookworm)").
import { containerOf, type ContainerInfo } from './container';

/** "podman: my-app, image debian:bookworm" (pod-qualified under Kubernetes; the short id when unnamed). */
export function containerLabel(c: ContainerInfo): string {
  const where = c.pod ? `${c.namespace ? `${c.namespace}/` : ''}${c.pod}/` : '';
  const who = c.name ? `${c.runtime}: ${where}${c.name}` : `${c.runtime} ${c.id.slice(0, 12)}`;
  return c.image ? `${who}, image ${c.image}` : who;
}

/** "pid 1234 (podman: my-app, image debian:bookworm)", or "pid 1234" outside containers. */
export function pidLabel(pid: number, c: ContainerInfo | undefined = containerOf(pid)): string {
  return c ? `pid ${pid} (${containerLabel(c)})` : `pid ${pid}`;
}

/** A report's header with each target pid it names labelled with its container (once, at its first mention). */
export function labelPids(text: string, pids: number[], of: (pid: number) => ContainerInfo | undefined = containerOf): string {
  let out = text;
  for (const pid of pids) {
    const c = of(pid);
    if (!c) continue;
    const re = new RegExp(`\\bpid ${pid}(?!\\d)`);
    out = re.test(out) ? out.replace(re, pidLabel(pid, c)) : `${out} [${pidLabel(pid, c)}]`;
  }
  return out;
}
