// Decides how to start the privileged helper: directly when the editor already has the
// privileges, otherwise through pkexec (polkit asks the user), otherwise sudo -n; otherwise a
// message with the exact command that would work. Pure, so it is unit-tested without VS Code.
import fs from 'node:fs';
import path from 'node:path';

export type PrivilegeMethod = 'auto' | 'direct' | 'pkexec' | 'sudo';

export interface LaunchFacts {
  euid: number;
  capabilities: string[];
  /** absolute paths, or undefined when not installed */
  pkexec?: string;
  sudo?: string;
  /** `sudo -n true` succeeded (a NOPASSWD rule exists) */
  sudoNonInteractive: boolean;
  /** a graphical session where a polkit agent can ask for a password */
  hasDisplay: boolean;
  /** the editor's own runtime (Electron) */
  execPath: string;
  /** absolute path of a system node, if any */
  systemNode?: string;
}

export interface LaunchPlan {
  method: 'direct' | 'pkexec' | 'sudo';
  command: string;
  args: string[];
  env: Record<string, string>;
}

export class LaunchRefused extends Error {}

const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The environment the helper gets: nothing that can inject code (NODE_OPTIONS and friends are dropped). */
export function helperEnv(electron: boolean): Record<string, string> {
  const env: Record<string, string> = { PATH: SAFE_PATH, LANG: 'C.UTF-8' };
  if (electron) env.ELECTRON_RUN_AS_NODE = '1';
  return env;
}

export function planLaunch(facts: LaunchFacts, helperJs: string, method: PrivilegeMethod, nodeSetting: string): LaunchPlan {
  const node = nodeSetting || facts.systemNode || facts.execPath;
  const electron = node === facts.execPath && !facts.systemNode && !nodeSetting;
  const env = helperEnv(electron);
  const fullCaps = ['CAP_BPF', 'CAP_PERFMON', 'CAP_SYS_ADMIN'].every((c) => facts.capabilities.includes(c));
  const someCaps = ['CAP_BPF', 'CAP_PERFMON'].every((c) => facts.capabilities.includes(c));
  const direct = (): LaunchPlan => ({ method: 'direct', command: node, args: [helperJs], env });
  // pkexec and sudo clear the environment: pass it explicitly through env(1), never a shell.
  const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const viaPkexec = (): LaunchPlan => ({ method: 'pkexec', command: facts.pkexec!, args: ['/usr/bin/env', '-i', ...envArgs, node, helperJs], env });
  const viaSudo = (): LaunchPlan => ({ method: 'sudo', command: facts.sudo!, args: ['-n', '/usr/bin/env', '-i', ...envArgs, node, helperJs], env });
  const manual = `sudo ${node} ${helperJs}`;

  switch (method) {
    case 'direct':
      return direct();
    case 'pkexec':
      if (!facts.pkexec) throw new LaunchRefused('ebpfStudio.helper.privilege is "pkexec" but pkexec is not installed: apt-get install pkexec (package policykit-1 on older releases), or choose "sudo".');
      return viaPkexec();
    case 'sudo':
      if (!facts.sudo) throw new LaunchRefused('ebpfStudio.helper.privilege is "sudo" but sudo is not installed.');
      if (!facts.sudoNonInteractive) {
        throw new LaunchRefused(`sudo needs a password and the editor cannot type it. Allow it without one for this command (sudoers: "${process.env.USER ?? 'you'} ALL=(root) NOPASSWD: ${node} ${helperJs}"), or choose "pkexec".`);
      }
      return viaSudo();
    default:
      if (facts.euid === 0 || fullCaps) return direct();
      if (facts.pkexec && facts.hasDisplay) return viaPkexec();
      if (facts.sudo && facts.sudoNonInteractive) return viaSudo();
      if (someCaps) return direct();
      throw new LaunchRefused(
        `eBPF tracing needs root. No way to get it without a prompt was found (pkexec needs a desktop session with a polkit agent; sudo -n needs a NOPASSWD rule). Either start VS Code with the privileges, or allow the helper in sudoers: ${manual}`,
      );
  }
}

export function which(cmd: string, pathVar = process.env.PATH ?? SAFE_PATH): string | undefined {
  for (const dir of [...pathVar.split(':'), ...SAFE_PATH.split(':')]) {
    if (!dir) continue;
    const full = path.join(dir, cmd);
    try {
      fs.accessSync(full, fs.constants.X_OK);
      if (fs.statSync(full).isFile()) return full;
    } catch {
      /* not here */
    }
  }
  return undefined;
}
