// `ebpf-studio new-project DIR [--template minimal|ringbuf]`: a libbpf-style project (X.bpf.c,
// X.h, X.c loader on a skeleton, Makefile, VS Code tasks, compile_commands.json for clangd).
import type { Command } from '../command';
import { parse } from '../args';
import { usageError } from '../../protocol/errors';
import { createProject, parseTemplate } from '../../authoring/newProject';
import { TEMPLATE_INFO } from '../../authoring/projectTemplates';
import { defaultCacheDir, ensureVmlinux } from '../../authoring/toolchain';

const options = {
  template: { type: 'string', short: 't' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const newProjectCommand: Command = {
  name: 'new-project',
  summary: 'start a libbpf-style BPF project (kernel program, skeleton loader, Makefile)',
  usage: 'ebpf-studio new-project DIR [--template minimal|ringbuf]',
  async run(argv, io) {
    const { values, positionals } = parse(argv, options, true);
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    if (positionals.length !== 1) throw usageError(positionals.length ? `give one folder, got ${positionals.length}` : 'give the folder to create the project in');
    const template = parseTemplate((values.template as string | undefined) ?? 'minimal');
    const p = createProject(positionals[0], template, await ensureVmlinux(defaultCacheDir()));
    io.out(`created ${p.dir} (${TEMPLATE_INFO[template].summary})`);
    for (const f of p.files) io.out(`  ${f}`);
    io.out(`build both halves: make -C ${p.dir}\nrun the loader:    sudo ${p.dir}/${p.app}`);
    return 0;
  },
};
