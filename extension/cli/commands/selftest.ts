// `ebpf-studio selftest [--parent PID] [--attach KIND] [--duration S] [--json]`: prints exec
// events; proves that BPF loads, attaches and streams on this machine.
import type { Command } from '../command';
import { commonOptions, durationFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { selftestTracer } from '../../tracers/selftest/tracer';
import { usageError } from '../../protocol/errors';

export const selftestCommand: Command = {
  name: 'selftest',
  summary: 'trace process execs through a ring buffer (proves BPF works here)',
  usage: 'ebpf-studio selftest [--parent PID] [--attach tracepoint|raw_tp|tp_btf] [--duration S] [--json]',
  async run(argv, io) {
    const { values } = parse(argv, { ...commonOptions, parent: { type: 'string' }, attach: { type: 'string' } });
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    const attach = (values.attach as string | undefined) ?? 'tracepoint';
    if (!['tracepoint', 'raw_tp', 'tp_btf'].includes(attach)) throw usageError(`--attach must be tracepoint, raw_tp or tp_btf, got "${attach}"`);
    return runTracer(
      {
        tracer: selftestTracer,
        options: { parentPid: pidFlag(values.parent, '--parent') ?? 0, magic: 0x5eed, attach: attach as 'tracepoint' },
        privilege: 'bpf',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        formatUpdate: (u) => u.events.map((e) => `exec pid=${e.pid} comm=${e.comm}`).join('\n'),
        formatResult: (r) => `${r.events.length} execs seen`,
        banner: () => 'Tracing execs... Ctrl-C to end.',
      },
      io,
    );
  },
};
