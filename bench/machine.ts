// The machine a run was measured on, for RESULTS.md: CPU, cores, memory, kernel, tool versions.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JAVA_HOME, root } from './lib';

function firstLine(cmd: string, args: string[], re?: RegExp): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error) return 'not installed';
  const text = `${r.stdout}\n${r.stderr}`;
  const line = text.split('\n').find((l) => (re ? re.test(l) : l.trim())) ?? '';
  return line.trim() || 'unknown';
}

function libbpfVersion(): string {
  try {
    const file = [path.join(root, 'dist', 'ebpf_studio.node'), path.join(root, 'native', 'build', 'Release', 'ebpf_studio.node')].find((f) => fs.existsSync(f));
    if (!file) return 'addon not built';
    return (require(file) as { libbpfVersion(): string }).libbpfVersion();
  } catch (e) {
    return `unknown (${(e as Error).message})`;
  }
}

export function machine(): [string, string][] {
  const cpu = os.cpus();
  const vm = fs.existsSync('/proc/cpuinfo') && /\bhypervisor\b/.test(fs.readFileSync('/proc/cpuinfo', 'utf8')) ? ' (virtual machine)' : '';
  return [
    ['CPU', `${cpu[0]?.model ?? 'unknown'}${vm}`],
    ['cores', String(cpu.length)],
    ['memory', `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`],
    ['kernel', `${os.release()} (${os.arch()})`],
    ['distribution', (() => {
      try {
        return /PRETTY_NAME="([^"]+)"/.exec(fs.readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'unknown';
      } catch {
        return 'unknown';
      }
    })()],
    ['node', process.version],
    ['clang', firstLine('clang', ['--version'], /version/)],
    ['libbpf (in the addon)', libbpfVersion()],
    ['bpftrace', firstLine('bpftrace', ['--version'])],
    ['heaptrack', firstLine('heaptrack', ['--version'])],
    ['JDK', firstLine(path.join(JAVA_HOME, 'bin', 'java'), ['-version'], /version/)],
    ['chromium', firstLine('chromium', ['--version'])],
    ['date', new Date().toISOString().replace('T', ' ').slice(0, 16) + ' UTC'],
  ];
}
