// The root-owned install of the privileged helper: what is copied where, and the one shell
// script root runs to do it. Root runs only root-owned tools here (/bin/sh, install(1),
// sha256sum, mv), never a file from the user's extensions folder, and every copied file is
// checked against the hash the extension computed before asking for authentication.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const INSTALL_ROOT = '/usr/local/lib/ebpf-studio';
/** The stable path pkexec (polkit exec.path) and the suggested sudoers rule name. */
export const HELPER_LAUNCHER = `${INSTALL_ROOT}/ebpf-studio-helper`;
export const VERSION_FILE = `${INSTALL_ROOT}/VERSION`;
export const POLKIT_ACTION = 'dev.ebpfstudio.helper.run';
export const POLKIT_POLICY = `/usr/share/polkit-1/actions/${POLKIT_ACTION}.policy`;
const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface InstallFile {
  /** absolute source path (in the extension's dist folder) */
  from: string;
  /** path relative to the version folder */
  to: string;
  mode: 0o644 | 0o755;
  sha256: string;
}

export interface InstallPlan {
  version: string;
  dir: string;
  files: InstallFile[];
  /** POSIX sh run as root with `/bin/sh -c` */
  script: string;
}

export function sha256File(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Single-quoted for sh; paths come from our own folder but may contain spaces. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** What goes into the version folder from `distDir`: bundle, addon, launcher, BPF objects. */
export function installFiles(distDir: string): InstallFile[] {
  const f = (rel: string, mode: 0o644 | 0o755): InstallFile => ({ from: path.join(distDir, rel), to: rel, mode, sha256: sha256File(path.join(distDir, rel)) });
  const files = [f('helper.js', 0o644), f('ebpf_studio.node', 0o755), f('ebpf-studio-launch', 0o755)];
  for (const o of fs.readdirSync(path.join(distDir, 'bpf')).filter((n) => n.endsWith('.bpf.o')).sort()) files.push(f(`bpf/${o}`, 0o644));
  return files;
}

export interface NodeChoice {
  /** absolute path root will run, or 'copy' to copy `from` into the version folder as ./node */
  path: string;
  copyFrom?: string;
  electron: boolean;
}

export function launcherScript(version: string, dir: string, node: string, electron: boolean): string {
  const env = [`PATH=${SAFE_PATH}`, 'LANG=C.UTF-8', ...(electron ? ['ELECTRON_RUN_AS_NODE=1'] : [])];
  return [
    '#!/bin/sh',
    `# eBPF Studio privileged helper ${version}. Root-owned; written by "eBPF: Install Privileged Helper".`,
    '# Only the ids pkexec or sudo set pass through; the helper decides from them whom it works for.',
    `exec /usr/bin/env -i ${env.join(' ')} "PKEXEC_UID=\${PKEXEC_UID-}" "SUDO_UID=\${SUDO_UID-}" "SUDO_GID=\${SUDO_GID-}" ${shq(node)} ${shq(`${dir}/helper.js`)}`,
    '',
  ].join('\n');
}

export function polkitPolicy(launcher = HELPER_LAUNCHER): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE policyconfig PUBLIC "-//freedesktop//DTD PolicyKit Policy Configuration 1.0//EN" "http://www.freedesktop.org/standards/PolicyKit/1/policyconfig.dtd">
<policyconfig>
  <vendor>eBPF Studio</vendor>
  <action id="${POLKIT_ACTION}">
    <description>Run the eBPF Studio tracing helper</description>
    <message>eBPF Studio wants to trace programs on this computer. This runs its helper as root: it loads BPF programs into the kernel and can read the memory and activity of every process.</message>
    <defaults>
      <allow_any>auth_admin</allow_any>
      <allow_inactive>auth_admin</allow_inactive>
      <allow_active>auth_admin_keep</allow_active>
    </defaults>
    <annotate key="org.freedesktop.policykit.exec.path">${launcher}</annotate>
  </action>
</policyconfig>
`;
}

/** `where` moves the install (tests install into a temporary root-owned folder); the editor always uses the defaults. */
export function installPlan(distDir: string, version: string, node: NodeChoice, where: { root?: string; policy?: string } = {}): InstallPlan {
  if (!/^[0-9A-Za-z.+-]+$/.test(version)) throw new Error(`unexpected extension version "${version}"`);
  const root = where.root ?? INSTALL_ROOT;
  const launcher = `${root}/ebpf-studio-helper`;
  const policy = where.policy ?? POLKIT_POLICY;
  const dir = `${root}/${version}`;
  const files = installFiles(distDir);
  if (node.copyFrom) files.push({ from: node.copyFrom, to: 'node', mode: 0o755, sha256: sha256File(node.copyFrom) });
  const nodePath = node.copyFrom ? `${dir}/node` : node.path;
  const tmp = `${dir}.new`;
  const heredoc = (file: string, text: string, mode: string) => `cat > ${shq(file)} <<'EBPF_STUDIO_EOF'\n${text}EBPF_STUDIO_EOF\nchown root:root ${shq(file)}\nchmod ${mode} ${shq(file)}\n`;
  const script = [
    'set -eu',
    'umask 022',
    `install -d -m 0755 -o root -g root ${shq(root)}`,
    `rm -rf ${shq(tmp)}`,
    `install -d -m 0755 -o root -g root ${shq(tmp)} ${shq(`${tmp}/bpf`)}`,
    ...files.map((f) => `install -m 0${f.mode.toString(8)} -o root -g root ${shq(f.from)} ${shq(`${tmp}/${f.to}`)}`),
    // What root copied must be what the extension hashed before asking for authentication.
    `cd ${shq(tmp)}`,
    `sha256sum --quiet --strict -c - <<'EBPF_STUDIO_EOF'\n${files.map((f) => `${f.sha256}  ${f.to}`).join('\n')}\nEBPF_STUDIO_EOF`,
    'cd /',
    `rm -rf ${shq(dir)}`,
    `mv ${shq(tmp)} ${shq(dir)}`,
    heredoc(`${launcher}.new`, launcherScript(version, dir, nodePath, node.electron), '0755').trimEnd(),
    `mv ${shq(`${launcher}.new`)} ${shq(launcher)}`,
    `printf '%s\\n' ${shq(version)} > ${shq(`${root}/VERSION`)}`,
    `install -d -m 0755 ${shq(path.dirname(policy))}`,
    heredoc(policy, polkitPolicy(launcher), '0644').trimEnd(),
    `echo ${shq(`eBPF Studio helper ${version} installed in ${dir}`)}`,
    '',
  ].join('\n');
  return { version, dir, files, script };
}

/** The installed version, or undefined when nothing (or something not root-owned) is installed. */
export function installedVersion(): string | undefined {
  try {
    for (const f of [VERSION_FILE, HELPER_LAUNCHER]) {
      const st = fs.statSync(f);
      if (st.uid !== 0 || st.mode & 0o022) return undefined;
    }
    return fs.readFileSync(VERSION_FILE, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The sudoers line that lets `user` start the installed helper without a password. */
export function sudoersLine(user: string): string {
  return `${user} ALL=(root) NOPASSWD: ${HELPER_LAUNCHER}`;
}

/**
 * The node root will run: the machine-scoped setting, a system node, or the editor's runtime,
 * whichever is first root-owned and not writable by others; otherwise a plain node (not
 * Electron) is copied into the install. `trusted` is extension/privilege/trustedPath's check.
 */
export function chooseNode(
  candidates: (string | undefined)[],
  execPath: string,
  execIsElectron: boolean,
  trusted: (file: string) => boolean,
): NodeChoice {
  for (const c of candidates) if (c && path.isAbsolute(c) && fs.existsSync(c) && trusted(c)) return { path: c, electron: false };
  if (trusted(execPath)) return { path: execPath, electron: execIsElectron };
  if (!execIsElectron) return { path: 'copy', copyFrom: execPath, electron: false };
  throw new Error(`no root-owned node to run the helper with (the editor's runtime ${execPath} can be changed by its owner): install Node.js (apt-get install nodejs) and run the install again`);
}
