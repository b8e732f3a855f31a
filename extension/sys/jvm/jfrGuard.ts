// The guard of one JFR recording we started: a small process of its own, started beside the
// session, that holds the reading end of a pipe whose writing end only the session holds. The
// session writes "done" before it ends the recording itself; if instead the pipe closes without
// it (the CLI or editor was killed, SIGKILL included), the guard stops the recording by name, so
// the JVM does not go on tracing methods or recording for nobody. A pipe, not polling: the kernel
// closes it when its holder dies, whatever the cause, and the guard sleeps until then.
//
// argv: PID START_TIME NAME. Nothing else is read; the JVM is attached as its owner (./attach.ts).
import { jcmd } from './attach';
import { sameProcess } from '../proc/processes';

const GUARDED_NAME = /^ebpf-studio-[A-Za-z0-9-]{1,100}$/;

function main(): void {
  const [pidArg, startArg, name] = process.argv.slice(2);
  const pid = Number(pidArg);
  const startTime = Number(startArg);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(startTime) || !GUARDED_NAME.test(name ?? '')) {
    process.stderr.write('jfrGuard: usage: jfrGuard PID START_TIME NAME (a recording named ebpf-studio-…)\n');
    process.exit(2);
  }
  // keeps no directory of the caller's busy (a container's or a removable disk's)
  process.chdir('/');
  let said = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    said = (said + d).slice(-16);
  });
  process.stdin.on('error', () => undefined);
  process.stdin.on('close', () => {
    // a pid now held by another process (the JVM ended, its pid reused) is left alone
    if (said.includes('done') || !sameProcess({ pid, startTime })) process.exit(0);
    jcmd(pid, `JFR.stop name=${name}`, { timeoutMs: 30_000 }).then(
      () => process.exit(0),
      () => process.exit(0),
    );
  });
}

main();
