// `ebpf-studio <command> [options]`: the tracers without VS Code, for scripts, servers, tests
// and benchmarks. Exit codes: 0 ok, 2 bad usage or input, 3 missing privilege, 4 unsuitable
// target, 1 anything else; the reason always goes to stderr, never a stack trace.
import { exitCodes, StudioError } from '../protocol/errors';
import type { Io } from './command';
import { commands } from './commands';

const io: Io = {
  out: (t) => process.stdout.write(t.endsWith('\n') ? t : t + '\n'),
  err: (t) => process.stderr.write(t.endsWith('\n') ? t : t + '\n'),
};

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'usage: ebpf-studio <command> [options]',
    '',
    'commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Common options: --pid PID, --duration SECONDS (without it: until Ctrl-C), --json.',
    'Run "ebpf-studio <command> --help" for a command\'s options.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.out(help());
    return name ? 0 : 2;
  }
  const cmd = commands.find((c) => c.name === name);
  if (!cmd) {
    io.err(`ebpf-studio: unknown command "${name}"\n\n${help()}`);
    return 2;
  }
  try {
    return await cmd.run(rest, io);
  } catch (e) {
    if (e instanceof StudioError) {
      io.err(`ebpf-studio ${name}: ${e.message}`);
      if (e.detail && process.env.EBPF_STUDIO_DEBUG) io.err(e.detail);
      if (e.kind === 'usage') io.err(`usage: ${cmd.usage}`);
      return exitCodes[e.kind];
    }
    const err = e as Error & { log?: string };
    io.err(`ebpf-studio ${name}: ${err.message ?? String(e)}`);
    if (process.env.EBPF_STUDIO_DEBUG) io.err(err.stack ?? '');
    return 1;
  }
}

export function runCli(): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // Tracers hold native threads; once the result is out, nothing is left to wait for. "Out"
      // means flushed: stdout to a pipe is asynchronous, and exiting at once cut a large --json
      // document at 64 KiB (the pipe's buffer). An empty write's callback runs after the rest.
      process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
    },
    (e) => {
      process.stderr.write(`ebpf-studio: ${String(e)}\n`);
      process.exit(1);
    },
  );
}

if (require.main === module) runCli();
