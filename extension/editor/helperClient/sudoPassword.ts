// Headless privilege: sudo's password, typed into a VS Code password box, checked with
// `sudo -S -k -p '' -v` on a pipe. It is never put on a command line, in a file or in a log;
// after 3 wrong tries we stop. The caller keeps a correct one in memory for this window only.
import { spawn } from 'node:child_process';

export type PasswordCheck = { ok: true } | { ok: false; wrong: boolean; message: string };

export const MAX_TRIES = 3;

/** Runs `sudo -S -k -p '' -v` with the password on stdin. */
export function checkSudoPassword(sudo: string, password: string, timeoutMs = 15000): Promise<PasswordCheck> {
  return new Promise((resolve) => {
    const child = spawn(sudo, ['-S', '-k', '-p', '', '-v'], { stdio: ['pipe', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
    let err = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ ok: false, wrong: false, message: `cannot run ${sudo}: ${e.message}` });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) return resolve({ ok: true });
      const text = err.trim();
      if (/not in the sudoers|may not run sudo|not allowed/i.test(text)) return resolve({ ok: false, wrong: false, message: `sudo refuses this user: ${text.split('\n').pop()}` });
      resolve({ ok: false, wrong: true, message: 'wrong password' });
    });
    // One line, then EOF: a wrong password makes sudo fail instead of asking again.
    child.stdin.on('error', () => undefined);
    child.stdin.end(`${password}\n`);
  });
}

/**
 * Asks up to MAX_TRIES times. `ask` returns undefined when the user cancels. Resolves with the
 * correct password, or rejects with a message naming what to do.
 */
export async function obtainSudoPassword(ask: (attempt: number, previous?: string) => PromiseLike<string | undefined>, check: (pw: string) => Promise<PasswordCheck>): Promise<string> {
  let previous: string | undefined;
  for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
    const pw = await ask(attempt, previous);
    if (pw === undefined) throw new Error('sudo password not given: tracing needs root (cancelled)');
    const r = await check(pw);
    if (r.ok) return pw;
    if (!r.wrong) throw new Error(r.message);
    previous = r.message;
  }
  throw new Error(`sudo: ${MAX_TRIES} wrong passwords; stopped asking. Run "eBPF: Restart Privileged Helper" to try again, or allow the helper without a password in sudoers.`);
}
