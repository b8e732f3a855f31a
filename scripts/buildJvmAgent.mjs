// Builds native/jvmagent/*.c (agent.c and the parts it calls) into dist/libebpf-studio-jvmagent.so (the JVMTI agent of
// `profile --java agent`) against the JDK headers found here. Without JDK headers the agent is
// skipped with a message and the profiler reports it unavailable; nothing else fails.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const JVMAGENT_FILE = 'libebpf-studio-jvmagent.so';

/** A JDK home whose include/ has jni.h and include/linux/jni_md.h, or undefined. */
export function findJdkHome() {
  const ok = (home) => home && fs.existsSync(path.join(home, 'include', 'jni.h')) && fs.existsSync(path.join(home, 'include', 'linux', 'jni_md.h'));
  const candidates = [];
  if (process.env.JAVA_HOME) candidates.push(process.env.JAVA_HOME);
  for (const tool of ['javac', 'java']) {
    const r = spawnSync('sh', ['-c', `readlink -f "$(command -v ${tool})"`], { encoding: 'utf8' });
    const bin = r.status === 0 ? r.stdout.trim() : '';
    if (bin) candidates.push(path.dirname(path.dirname(bin)));
  }
  try {
    for (const d of fs.readdirSync('/usr/lib/jvm').sort().reverse()) candidates.push(path.join('/usr/lib/jvm', d));
  } catch {
    /* no /usr/lib/jvm */
  }
  return candidates.find(ok);
}

export function buildJvmAgent(root, dist) {
  const dir = path.join(root, 'native', 'jvmagent');
  const src = path.join(dir, 'agent.c');
  const out = path.join(dist, JVMAGENT_FILE);
  if (!fs.existsSync(src)) return;
  const sources = fs.readdirSync(dir).filter((f) => /\.[ch]$/.test(f)).map((f) => path.join(dir, f));
  const home = findJdkHome();
  if (!home) {
    console.warn('build: skipping the JVM agent (dist/libebpf-studio-jvmagent.so): no JDK headers (include/jni.h) found via JAVA_HOME, javac or /usr/lib/jvm. Install a JDK (apt-get install openjdk-17-jdk-headless) for `profile --java agent`; without it the profiler uses the perf map only.');
    return;
  }
  if (fs.existsSync(out) && sources.every((f) => fs.statSync(out).mtimeMs > fs.statSync(f).mtimeMs)) return;
  const tmp = `${out}.tmp${process.pid}`;
  const r = spawnSync('gcc', ['-shared', '-fPIC', '-O2', '-g', '-fno-omit-frame-pointer', '-Wall', '-Wextra', '-Werror', '-fvisibility=hidden', '-std=gnu11',
    `-I${path.join(home, 'include')}`, `-I${path.join(home, 'include', 'linux')}`, ...sources.filter((f) => f.endsWith('.c')), '-o', tmp, '-ldl', '-lpthread'], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('build: compiling the JVM agent failed');
    process.exit(1);
  }
  // rename, never rewrite in place: a JVM may have the old file mapped
  fs.renameSync(tmp, out);
  console.log(`build: JVM agent → dist/${JVMAGENT_FILE} (JDK headers from ${home})`);
}
