// Which Debian package owns a file (dpkg-query -S), for debug-info advice that names the right
// package. Asked only for modules without debug info, once per path; no dpkg, no answer.
import { spawnSync } from 'node:child_process';

const cache = new Map<string, string | undefined>();

/** "/usr/lib/x86_64-linux-gnu/libc.so.6" → "libc6"; usrmerge paths are tried under /lib too. */
export function ownerPackage(file: string): string | undefined {
  if (cache.has(file)) return cache.get(file);
  let owner: string | undefined;
  const candidates = [file];
  const merged = /^\/usr(\/(lib|lib32|lib64|libx32|bin|sbin)\/.*)$/.exec(file);
  if (merged) candidates.push(merged[1]);
  for (const path of candidates) {
    const r = spawnSync('dpkg-query', ['-S', path], { encoding: 'utf8', timeout: 3000 });
    if (r.status !== 0 || !r.stdout) continue;
    // "openjdk-17-jre-headless:amd64: /usr/lib/jvm/…/libjvm.so" (diversions print other lines first)
    const line = r.stdout.split('\n').find((l) => l.endsWith(`: ${path}`) && !l.startsWith('diversion'));
    const pkg = line?.slice(0, line.lastIndexOf(': ')).split(',')[0].trim().replace(/:[a-z0-9_]+$/, '');
    if (pkg) {
      owner = pkg;
      break;
    }
  }
  cache.set(file, owner);
  return owner;
}
