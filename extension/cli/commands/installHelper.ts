// `ebpf-studio install-helper [--print]`: copies the helper, addon, launcher and BPF objects into
// the root-owned /usr/local/lib/ebpf-studio/<version>/ and installs the polkit action. Run as a
// user, it asks sudo once and root runs only /bin/sh with the generated script (coreutils
// install/sha256sum), never this CLI; --print shows that script instead.
import { spawnSync } from 'node:child_process';
import { defaultAssetDir } from '../../sys/addon';
import { planForDist } from '../../privilege/installRun';
import { which } from '../../privilege/launch';
import { HELPER_LAUNCHER, sudoersLine } from '../../privilege/installPlan';
import { privilegeError, StudioError } from '../../protocol/errors';
import type { Command } from '../command';
import { parse } from '../args';

export const installHelperCommand: Command = {
  name: 'install-helper',
  summary: 'install the privileged helper into /usr/local/lib/ebpf-studio (root-owned) for the editor',
  usage: 'ebpf-studio install-helper [--print]   (as root, or as a user with sudo: asks for the password once)',
  async run(argv, io) {
    const { values } = parse(argv, { print: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    let plan;
    try {
      plan = planForDist(defaultAssetDir());
    } catch (e) {
      throw new StudioError('internal', `cannot prepare the helper install: ${(e as Error).message} (run "npm run build" first?)`);
    }
    if (values.print) {
      io.out(plan.script);
      return 0;
    }
    let cmd: string[];
    if (process.geteuid?.() === 0) cmd = ['/bin/sh', '-c', plan.script];
    else {
      const sudo = which('sudo');
      if (!sudo) throw privilegeError('installing the helper needs root and sudo is not installed: run this as root');
      cmd = [sudo, '/bin/sh', '-c', plan.script];
    }
    // stdin inherited: sudo asks on the terminal, once.
    const r = spawnSync(cmd[0], cmd.slice(1), { stdio: 'inherit', env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
    if (r.status !== 0) throw privilegeError(`the helper install failed (exit ${r.status ?? r.signal})`);
    const user = process.env.SUDO_USER ?? process.env.USER ?? 'USER';
    io.err(`The editor now starts ${HELPER_LAUNCHER} through pkexec or sudo. For no password prompt, an administrator may add to sudoers: ${sudoersLine(user)}`);
    return 0;
  },
};
