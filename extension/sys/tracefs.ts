// libbpf resolves tracepoint ids through tracefs; on some boots it is not mounted. Root may
// mount it; the mount syscall has no Node binding, so this uses mount(8) without a shell.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';

let mounted: boolean | undefined;

export function ensureTracefs(): boolean {
  if (mounted) return true;
  if (fs.existsSync('/sys/kernel/tracing/events') || fs.existsSync('/sys/kernel/debug/tracing/events')) return (mounted = true);
  if (process.geteuid?.() !== 0) return false;
  const r = spawnSync('mount', ['-t', 'tracefs', 'nodev', '/sys/kernel/tracing'], { stdio: 'ignore', timeout: 5000 });
  mounted = r.status === 0 && fs.existsSync('/sys/kernel/tracing/events');
  return mounted;
}
