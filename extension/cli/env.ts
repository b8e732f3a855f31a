// The in-process tracer environment for the CLI, with the privilege check done up front so a
// user without it gets exit code 3 and the command to run, before anything is loaded.
import { defaultAssetDir, loadAddon } from '../sys/addon';
import { privilegeError } from '../protocol/errors';
import { effectiveCapabilities } from '../tracers/capabilities';
import type { TracerEnv } from '../tracers/tracer';

export function requireBpfPrivilege(needs: 'bpf' | 'uprobe'): void {
  if (process.geteuid?.() === 0) return;
  const caps = effectiveCapabilities();
  const args = process.argv.slice(1).join(' ');
  if (needs === 'uprobe' && !caps.includes('CAP_SYS_ADMIN')) {
    throw privilegeError(`this tracer attaches uprobes/USDT, which need root (CAP_SYS_ADMIN). Run: sudo ${process.execPath} ${args}`);
  }
  if (!caps.includes('CAP_BPF') || !caps.includes('CAP_PERFMON')) {
    throw privilegeError(`loading BPF programs needs root or CAP_BPF+CAP_PERFMON. Run: sudo ${process.execPath} ${args}`);
  }
}

export function cliEnv(verbose: boolean): TracerEnv {
  const assetDir = defaultAssetDir();
  return {
    addon: loadAddon(assetDir),
    assetDir,
    log: (m) => {
      if (verbose) process.stderr.write(`${m}\n`);
    },
  };
}
