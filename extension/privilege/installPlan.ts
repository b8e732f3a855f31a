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
/** The runner of a user's own code (extension/runner/): its own launcher and polkit action, authenticated every time. */
export const RUNNER_LAUNCHER = `${INSTALL_ROOT}/ebpf-studio-runner`;
export const RUNNER_POLKIT_ACTION = 'dev.ebpfstudio.runner.run';
export const RUNNER_POLKIT_POLICY = `/usr/share/polkit-1/actions/${RUNNER_POLKIT_ACTION}.policy`;
/** What the features need in the install, by file name (doctor lists what is missing). */
export const REQUIRED_FILES = ['helper.js', 'runner.js', 'ebpf_studio.node', 'ebpf-studio-launch', 'libebpf-studio-jvmagent.so', 'ebpf-studio-javalatency.jar', 'libebpf-studio-preload.so', 'ebpf-studio-inject'];
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

function fileOwner(p: string): { uid: number; gid: number } {
  const st = fs.statSync(p);
  return { uid: st.uid, gid: st.gid };
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
  // The agents, the interposer and its injector are optional in a build (no JDK headers or javac, no
  // compiler): without them --java agent, Java latency and the preload and inject leak modes say so; doctor lists what the install lacks.
  const optional = (rel: string, mode: 0o644 | 0o755) => (fs.existsSync(path.join(distDir, rel)) ? [f(rel, mode)] : []);
  const files = [
    f('helper.js', 0o644),
    f('runner.js', 0o644),
    f('ebpf_studio.node', 0o755),
    f('ebpf-studio-launch', 0o755),
    ...optional('libebpf-studio-jvmagent.so', 0o755),
    ...optional('ebpf-studio-javalatency.jar', 0o644),
    ...optional('libebpf-studio-preload.so', 0o755),
    ...optional('ebpf-studio-inject', 0o755),
    // ends a JFR recording the helper started if the helper is killed mid-session
    ...optional('jfrGuard.js', 0o644),
  ];
  for (const o of fs.readdirSync(path.join(distDir, 'bpf')).filter((n) => n.endsWith('.bpf.o')).sort()) files.push(f(`bpf/${o}`, 0o644));
  return files;
}

export interface NodeChoice {
  /** absolute path root will run, or 'copy' to copy `from` into the version folder as ./node */
  path: string;
  copyFrom?: string;
  electron: boolean;
}

export function launcherScript(version: string, dir: string, node: string, electron: boolean, script = 'helper.js'): string {
  const env = [`PATH=${SAFE_PATH}`, 'LANG=C.UTF-8', ...(electron ? ['ELECTRON_RUN_AS_NODE=1'] : [])];
  return [
    '#!/bin/sh',
    `# eBPF Studio ${script === 'helper.js' ? 'privileged helper' : 'runner of your own code'} ${version}. Root-owned; written by "eBPF: Install Privileged Helper".`,
    '# Only the ids pkexec or sudo set pass through; the helper decides from them whom it works for.',
    `exec /usr/bin/env -i ${env.join(' ')} "PKEXEC_UID=\${PKEXEC_UID-}" "SUDO_UID=\${SUDO_UID-}" "SUDO_GID=\${SUDO_GID-}" ${shq(node)} ${shq(`${dir}/${script}`)}`,
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

/**
 * The runner's action: auth_admin everywhere, never auth_admin_keep, so every run of a user's own
 * code as root asks for the admin password again (polkit keeps nothing for it).
 */
export function runnerPolkitPolicy(launcher = RUNNER_LAUNCHER): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE policyconfig PUBLIC "-//freedesktop//DTD PolicyKit Policy Configuration 1.0//EN" "http://www.freedesktop.org/standards/PolicyKit/1/policyconfig.dtd">
<policyconfig>
  <vendor>eBPF Studio</vendor>
  <action id="${RUNNER_POLKIT_ACTION}">
    <description>Run your own BPF program, loader or bpftrace script as root</description>
    <message>eBPF Studio wants to run a program you built (a BPF loader, a bpftrace script or a BPF object) as root. It can do anything on this computer: authenticate only for code you trust.</message>
    <defaults>
      <allow_any>auth_admin</allow_any>
      <allow_inactive>auth_admin</allow_inactive>
      <allow_active>auth_admin</allow_active>
    </defaults>
    <annotate key="org.freedesktop.policykit.exec.path">${launcher}</annotate>
  </action>
</policyconfig>
`;
}

/** `where` moves the install (tests install into a temporary root-owned folder); the editor always uses the defaults. */
export function installPlan(distDir: string, version: string, node: NodeChoice, where: { root?: string; policy?: string; runnerPolicy?: string } = {}): InstallPlan {
  if (!/^[0-9A-Za-z.+-]+$/.test(version)) throw new Error(`unexpected extension version "${version}"`);
  const root = where.root ?? INSTALL_ROOT;
  const launcher = `${root}/ebpf-studio-helper`;
  const policy = where.policy ?? POLKIT_POLICY;
  const runnerLauncher = `${root}/ebpf-studio-runner`;
  const runnerPolicy = where.runnerPolicy ?? (where.policy ? path.join(path.dirname(where.policy), `${RUNNER_POLKIT_ACTION}.policy`) : RUNNER_POLKIT_POLICY);
  const dir = `${root}/${version}`;
  const files = installFiles(distDir);
  if (node.copyFrom) files.push({ from: node.copyFrom, to: 'node', mode: 0o755, sha256: sha256File(node.copyFrom) });
  const nodePath = node.copyFrom ? `${dir}/node` : node.path;
  const tmp = `${dir}.new`;
  const heredoc = (file: string, text: string, mode: string) => `cat > ${shq(file)} <<'EBPF_STUDIO_EOF'\n${text}EBPF_STUDIO_EOF\nchown root:root ${shq(file)}\nchmod ${mode} ${shq(file)}\n`;
  // Each source is read once, by its folder's owner when that is not root (setpriv drops to that
  // uid/gid with no groups), so a file swapped for a symlink or hardlink to something only root may
  // read is not readable to the read: root never opens a path the user controls. The bytes land in
  // a root-only staging file (umask 077); what was written is hashed against the extension's hash
  // before anything gets its final mode. Any failure removes the staging files, by name.
  const reader = (from: string) => {
    const owner = fileOwner(path.dirname(from));
    return owner.uid === 0 ? `cat -- ${shq(from)}` : `/usr/bin/setpriv --reuid=${owner.uid} --regid=${owner.gid} --clear-groups -- cat -- ${shq(from)}`;
  };
  const staged = files.map((f) => shq(`${tmp}/${f.to}`));
  const script = [
    'set -eu',
    'umask 077',
    `install -d -m 0755 -o root -g root ${shq(root)}`,
    `ebpf_studio_unstage() { rm -f -- ${staged.join(' ')}; rmdir -- ${shq(`${tmp}/bpf`)} ${shq(tmp)} 2>/dev/null || true; }`,
    `trap 'if [ "\${ebpf_studio_done-}" != 1 ]; then ebpf_studio_unstage; fi' EXIT`,
    'ebpf_studio_unstage',
    `install -d -m 0700 -o root -g root ${shq(tmp)} ${shq(`${tmp}/bpf`)}`,
    ...files.map((f) => `${reader(f.from)} > ${shq(`${tmp}/${f.to}`)}`),
    // What root wrote must be what the extension hashed before asking for authentication.
    `cd ${shq(tmp)}`,
    `sha256sum --quiet --strict -c - <<'EBPF_STUDIO_EOF'\n${files.map((f) => `${f.sha256}  ${f.to}`).join('\n')}\nEBPF_STUDIO_EOF`,
    ...files.map((f) => `chmod 0${f.mode.toString(8)} ${shq(f.to)}`),
    `chmod 0755 ${shq(tmp)} bpf`,
    'umask 022',
    'cd /',
    // The previous install of this version: root's own folder in a root-owned parent, which no user can change.
    `rm -rf ${shq(dir)}`,
    `mv ${shq(tmp)} ${shq(dir)}`,
    'ebpf_studio_done=1',
    heredoc(`${launcher}.new`, launcherScript(version, dir, nodePath, node.electron), '0755').trimEnd(),
    `mv ${shq(`${launcher}.new`)} ${shq(launcher)}`,
    heredoc(`${runnerLauncher}.new`, launcherScript(version, dir, nodePath, node.electron, 'runner.js'), '0755').trimEnd(),
    `mv ${shq(`${runnerLauncher}.new`)} ${shq(runnerLauncher)}`,
    `printf '%s\\n' ${shq(version)} > ${shq(`${root}/VERSION`)}`,
    `install -d -m 0755 ${shq(path.dirname(policy))}`,
    heredoc(policy, polkitPolicy(launcher), '0644').trimEnd(),
    heredoc(runnerPolicy, runnerPolkitPolicy(runnerLauncher), '0644').trimEnd(),
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

export interface InstallReport {
  root: string;
  version?: string;
  dir?: string;
  /** files the features need that the install lacks (REQUIRED_FILES, the BPF objects, both launchers) */
  missing: string[];
}

/** What the root-owned install holds, for doctor: a feature whose file is missing silently falls back otherwise. */
export function installReport(root = INSTALL_ROOT, distDir?: string): InstallReport {
  let version: string | undefined;
  try {
    version = fs.readFileSync(`${root}/VERSION`, 'utf8').trim() || undefined;
  } catch {
    return { root, missing: [] };
  }
  const dir = `${root}/${version}`;
  const want = [...REQUIRED_FILES];
  // The BPF objects this build ships (when known), else at least one.
  const objs = distDir && fs.existsSync(path.join(distDir, 'bpf')) ? fs.readdirSync(path.join(distDir, 'bpf')).filter((n) => n.endsWith('.bpf.o')) : [];
  const missing = want.filter((f) => !fs.existsSync(path.join(dir, f)));
  for (const o of objs) if (!fs.existsSync(path.join(dir, 'bpf', o))) missing.push(`bpf/${o}`);
  if (!objs.length && !(fs.existsSync(path.join(dir, 'bpf')) && fs.readdirSync(path.join(dir, 'bpf')).some((n) => n.endsWith('.bpf.o')))) missing.push('bpf/*.bpf.o');
  for (const l of ['ebpf-studio-helper', 'ebpf-studio-runner']) if (!fs.existsSync(path.join(root, l))) missing.push(`../${l}`);
  return { root, version, dir, missing };
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
