// Decides how to start the privileged helper. An editor that already has the privileges runs
// the helper from its own folder. Anyone else gets root only for the root-owned install
// (/usr/local/lib/ebpf-studio, extension/privilege/installPlan.ts): through pkexec (polkit asks on a
// desktop), sudo -n (a NOPASSWD rule), or sudo -S with a password typed into the editor
// (headless / Remote-SSH). Never for a file the user can write. Pure, so it is unit-tested.
import fs from 'node:fs';
import path from 'node:path';
import { HELPER_LAUNCHER, RUNNER_LAUNCHER, sudoersLine } from './installPlan';

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
  /** version of the root-owned install, undefined when there is none */
  installedVersion?: string;
  /** the login name, for the suggested sudoers line */
  user?: string;
}

export interface LaunchPlan {
  method: 'direct' | 'pkexec' | 'sudo' | 'sudo-password';
  command: string;
  args: string[];
  env: Record<string, string>;
  /** sudo -S: the password goes on the child's stdin, first line, before anything else */
  password?: boolean;
}

export class LaunchRefused extends Error {}

const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The environment the helper gets: nothing that can inject code (NODE_OPTIONS and friends are dropped). */
export function helperEnv(electron: boolean): Record<string, string> {
  const env: Record<string, string> = { PATH: SAFE_PATH, LANG: 'C.UTF-8' };
  if (electron) env.ELECTRON_RUN_AS_NODE = '1';
  return env;
}

export const INSTALL_HINT = 'run "eBPF: Install Privileged Helper" (or `sudo ebpf-studio install-helper`) once: it copies the helper into /usr/local/lib/ebpf-studio, owned by root';

/**
 * `nodeSetting` must come from machine-scoped settings only (extension/editor/helperClient/helperSettings.ts); it
 * matters only when the editor already has the privileges, since the installed launcher fixes
 * its own node.
 */
export function planLaunch(facts: LaunchFacts, helperJs: string, method: PrivilegeMethod, nodeSetting: string): LaunchPlan {
  const node = nodeSetting || facts.systemNode || facts.execPath;
  const electron = node === facts.execPath && !facts.systemNode && !nodeSetting;
  const env = helperEnv(electron);
  const fullCaps = ['CAP_BPF', 'CAP_PERFMON', 'CAP_SYS_ADMIN'].every((c) => facts.capabilities.includes(c));
  const someCaps = ['CAP_BPF', 'CAP_PERFMON'].every((c) => facts.capabilities.includes(c));
  const direct = (): LaunchPlan => ({ method: 'direct', command: node, args: [helperJs], env });
  // pkexec and sudo clear the environment; the root-owned launcher sets the rest itself.
  const clean = helperEnv(false);
  const installed = (how: string) => {
    if (!facts.installedVersion) throw new LaunchRefused(`eBPF tracing needs root, and ${how} runs only the root-owned helper, which is not installed: ${INSTALL_HINT}.`);
  };
  const viaPkexec = (): LaunchPlan => (installed('pkexec'), { method: 'pkexec', command: facts.pkexec!, args: [HELPER_LAUNCHER], env: clean });
  const viaSudo = (): LaunchPlan => (installed('sudo'), { method: 'sudo', command: facts.sudo!, args: ['-n', HELPER_LAUNCHER], env: clean });
  // -k: always ask, so the first stdin line is always read as the password (never left over for the helper).
  const viaSudoPassword = (): LaunchPlan => (installed('sudo'), { method: 'sudo-password', command: facts.sudo!, args: ['-S', '-k', '-p', '', HELPER_LAUNCHER], env: clean, password: true });
  const nopasswd = sudoersLine(facts.user ?? process.env.USER ?? 'you');

  switch (method) {
    case 'direct':
      return direct();
    case 'pkexec':
      if (!facts.pkexec) throw new LaunchRefused('ebpfStudio.helper.privilege is "pkexec" but pkexec is not installed: apt-get install pkexec (package policykit-1 on older releases), or choose "sudo".');
      return viaPkexec();
    case 'sudo':
      if (!facts.sudo) throw new LaunchRefused('ebpfStudio.helper.privilege is "sudo" but sudo is not installed: apt-get install sudo, or start the editor as root.');
      return facts.sudoNonInteractive ? viaSudo() : viaSudoPassword();
    default:
      if (facts.euid === 0 || fullCaps) return direct();
      if (facts.pkexec && facts.hasDisplay) return viaPkexec();
      if (facts.sudo && facts.sudoNonInteractive) return viaSudo();
      if (facts.sudo && facts.installedVersion) return viaSudoPassword();
      if (someCaps) return direct();
      if (!facts.installedVersion) installed(facts.pkexec && facts.hasDisplay ? 'pkexec' : 'sudo');
      throw new LaunchRefused(
        `eBPF tracing needs root and there is no way to ask for it here: pkexec needs a desktop session with a polkit agent and sudo is ${facts.sudo ? 'not usable' : 'not installed'}. Either start the editor as root, or install sudo and allow the helper (sudoers: "${nopasswd}").`,
      );
  }
}

/**
 * How to start the runner of a user's own code (extension/runner/): directly when the editor is
 * root (or has CAP_BPF+CAP_PERFMON+CAP_SYS_ADMIN); otherwise only the root-owned runner launcher,
 * through pkexec (its polkit action is auth_admin: asked every time) or `sudo -S -k` with the
 * password typed for this run. Never `sudo -n`: a NOPASSWD rule (the helper's, or any other) must
 * not let code run as root without the password. The `privilege` setting does not change this.
 */
export function planRunnerLaunch(facts: LaunchFacts, runnerJs: string, nodeSetting: string): LaunchPlan {
  const node = nodeSetting || facts.systemNode || facts.execPath;
  const electron = node === facts.execPath && !facts.systemNode && !nodeSetting;
  const fullCaps = ['CAP_BPF', 'CAP_PERFMON', 'CAP_SYS_ADMIN'].every((c) => facts.capabilities.includes(c));
  if (facts.euid === 0 || fullCaps) return { method: 'direct', command: node, args: [runnerJs], env: helperEnv(electron) };
  if (!facts.installedVersion) throw new LaunchRefused(`running your own code as root goes through the root-owned runner, which is not installed: ${INSTALL_HINT}.`);
  if (facts.pkexec && facts.hasDisplay) return { method: 'pkexec', command: facts.pkexec, args: [RUNNER_LAUNCHER], env: helperEnv(false) };
  if (facts.sudo) return { method: 'sudo-password', command: facts.sudo, args: ['-S', '-k', '-p', '', RUNNER_LAUNCHER], env: helperEnv(false), password: true };
  throw new LaunchRefused('running your own code as root needs authentication, and there is no way to ask here: pkexec needs a desktop session with a polkit agent and sudo is not installed. Start the editor as root, or install sudo.');
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
