// Settings that choose what runs as root are read from the user's own (machine/global)
// settings and the defaults only. package.json marks them "scope": "machine"; reading through
// inspect() as well means even an editor that honoured a workspace value could not let a
// repository's .vscode/settings.json pick the binary that pkexec or sudo runs.
import * as vscode from 'vscode';
import type { PrivilegeMethod } from '../../privilege/launch';

export function machineSetting<T>(section: string, key: string, fallback: T): T {
  const i = vscode.workspace.getConfiguration(section).inspect<T>(key);
  return i?.globalValue ?? i?.defaultValue ?? fallback;
}

const METHODS: PrivilegeMethod[] = ['auto', 'direct', 'pkexec', 'sudo'];

export function helperSettings(): { privilege: PrivilegeMethod; nodePath: string } {
  const privilege = machineSetting<string>('ebpfStudio.helper', 'privilege', 'auto');
  const nodePath = machineSetting<string>('ebpfStudio.helper', 'nodePath', '');
  return {
    privilege: METHODS.includes(privilege as PrivilegeMethod) ? (privilege as PrivilegeMethod) : 'auto',
    // only an absolute path; anything else would be looked up in a PATH the user controls
    nodePath: typeof nodePath === 'string' && nodePath.startsWith('/') ? nodePath : '',
  };
}
