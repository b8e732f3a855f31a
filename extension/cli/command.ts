// The shape of a CLI command. Commands print results on stdout, reasons on stderr, and return
// an exit code; StudioErrors thrown out of run() become "ebpf-studio: <reason>" and their code.
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[], io: Io): Promise<number>;
}
