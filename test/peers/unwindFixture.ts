// Builds the unwinding fixture (test/fixtures/c/unwind) the way users build: -O2 without frame
// pointers, a PIE, with its own shared library. Used by the kernel test and the bench rows.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const SRC = path.resolve(__dirname, '..', 'fixtures', 'c', 'unwind');

/** Builds into `dir`; returns the reason on failure (gcc missing, compile error). */
export function buildUnwindFixture(dir: string): string | undefined {
  const lib = spawnSync('gcc', ['-O2', '-g', '-fomit-frame-pointer', '-shared', '-fPIC', path.join(SRC, 'unwlib.c'), '-o', path.join(dir, 'libunwlib.so')], { encoding: 'utf8' });
  if (lib.error) return `gcc is not installed: ${lib.error.message}`;
  if (lib.status !== 0) return `building libunwlib.so failed: ${lib.stderr}`;
  const exe = spawnSync('gcc', ['-O2', '-g', '-fomit-frame-pointer', '-pie', '-fPIE', path.join(SRC, 'unwindfix.c'), `-L${dir}`, '-lunwlib', '-Wl,-rpath,$ORIGIN', '-o', path.join(dir, 'unwindfix')], { encoding: 'utf8' });
  if (exe.status !== 0) return `building unwindfix failed: ${exe.stderr}`;
  return undefined;
}
