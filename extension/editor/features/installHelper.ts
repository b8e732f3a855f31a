// "eBPF: Install Privileged Helper" (ebpfStudio.installHelper): copies the helper into the
// root-owned /usr/local/lib/ebpf-studio/<version>/ with one authentication, installs our polkit
// action, and restarts the helper from there. Also sets up the per-object confirmation store
// (extension/editor/helperClient/objectConfirm.ts) used by Run BPF Program and Load and Verify. Context keys: none.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import * as vscode from 'vscode';
import { helper } from '../helperClient/helperClient';
import { HELPER_LAUNCHER, POLKIT_ACTION, sudoersLine } from '../../privilege/installPlan';
import { machineSetting } from '../helperClient/helperSettings';
import { planForDist, rootRun, runAsRoot, which } from '../../privilege/installRun';
import { checkSudoPassword, obtainSudoPassword } from '../helperClient/sudoPassword';
import { initObjectConfirm } from '../helperClient/objectConfirm';

async function install(context: vscode.ExtensionContext): Promise<boolean> {
  let plan;
  try {
    plan = planForDist(path.join(context.extensionPath, 'dist'), machineSetting('ebpfStudio.helper', 'nodePath', ''));
  } catch (e) {
    void vscode.window.showErrorMessage(`eBPF Studio: cannot install the helper: ${(e as Error).message}`);
    return false;
  }
  const ok = await vscode.window.showWarningMessage(
    `Install the eBPF Studio tracing helper ${plan.version} into ${plan.dir}, owned by root?`,
    {
      modal: true,
      detail: `The helper runs as root when you trace: it loads BPF programs and can read every process. It is copied (${plan.files.length} files, checked by SHA-256) with one password prompt, and polkit action ${POLKIT_ACTION} is added so pkexec runs only ${HELPER_LAUNCHER}.`,
    },
    'Install',
  );
  if (ok !== 'Install') return false;
  const sudo = which('sudo');
  const how = {
    euid: process.geteuid?.() ?? 1000,
    pkexec: which('pkexec'),
    hasDisplay: Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY),
    sudo,
    sudoNonInteractive: sudo ? spawnSync(sudo, ['-n', 'true'], { stdio: 'ignore', timeout: 3000 }).status === 0 : false,
    password: undefined as string | undefined,
  };
  try {
    if (how.euid !== 0 && !(how.pkexec && how.hasDisplay) && sudo && !how.sudoNonInteractive) {
      how.password = await obtainSudoPassword(
        (attempt, previous) => vscode.window.showInputBox({ password: true, ignoreFocusOut: true, title: 'eBPF Studio: sudo password', prompt: `${previous ? `${previous}; try ${attempt} of 3. ` : ''}Installing the helper needs root: your sudo password.` }),
        (pw) => checkSudoPassword(sudo, pw),
      );
    }
    const r = await runAsRoot(rootRun(plan.script, how));
    if (r.code !== 0) throw new Error(`the install failed (exit ${r.code}): ${r.output.split('\n').slice(-3).join(' | ')}`);
  } catch (e) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${(e as Error).message}`);
    return false;
  }
  const pick = await vscode.window.showInformationMessage(
    `eBPF Studio helper ${plan.version} installed in ${plan.dir}. For tracing without a password prompt, an administrator may add to sudoers: ${sudoersLine(process.env.USER ?? 'USER')}`,
    'Copy sudoers line',
  );
  if (pick) await vscode.env.clipboard.writeText(sudoersLine(process.env.USER ?? 'USER'));
  return true;
}

export function activate(context: vscode.ExtensionContext): void {
  initObjectConfirm(context);
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.installHelper', async () => {
      if (await install(context)) {
        try {
          if (helper().running) await helper().restart();
        } catch (e) {
          void vscode.window.showErrorMessage(`eBPF Studio: ${(e as Error).message}`);
        }
      }
    }),
  );
}
