// Builds native/javalatency (the Java agent of `latency --pid P Class.method` on JDK 17 to 23) into
// dist/ebpf-studio-javalatency.jar with the javac of a JDK whose java.base still carries its
// internal ASM (17 to 23: the agent compiles against it). Without such a JDK the jar is skipped
// with a message and the Java latency path reports itself unavailable; nothing else fails.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const JAVALATENCY_FILE = 'ebpf-studio-javalatency.jar';
const MANIFEST = 'Manifest-Version: 1.0\nAgent-Class: ebpfstudio.latency.Agent\nCan-Retransform-Classes: true\nCan-Redefine-Classes: false\n';

function feature(home) {
  try {
    const m = /^JAVA_VERSION="(\d+)/m.exec(fs.readFileSync(path.join(home, 'release'), 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** A JDK home with javac and jar whose java.base has the internal ASM (feature 17 to 23). */
export function findAsmJdk() {
  const homes = [];
  if (process.env.JAVA_HOME) homes.push(process.env.JAVA_HOME);
  try {
    for (const d of fs.readdirSync('/usr/lib/jvm').sort()) homes.push(path.join('/usr/lib/jvm', d));
  } catch {
    /* no /usr/lib/jvm */
  }
  return homes.find((h) => fs.existsSync(path.join(h, 'bin', 'javac')) && fs.existsSync(path.join(h, 'bin', 'jar')) && (feature(h) ?? 0) >= 17 && (feature(h) ?? 99) <= 23);
}

export function buildJavaLatency(root, dist) {
  const dir = path.join(root, 'native', 'javalatency');
  const out = path.join(dist, JAVALATENCY_FILE);
  if (!fs.existsSync(dir)) return;
  const sources = [];
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).forEach((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith('.java') && sources.push(path.join(d, e.name))));
  walk(dir);
  if (fs.existsSync(out) && sources.every((f) => fs.statSync(out).mtimeMs > fs.statSync(f).mtimeMs)) return;
  const home = findAsmJdk();
  if (!home) {
    console.warn(`build: skipping the Java latency agent (dist/${JAVALATENCY_FILE}): no JDK 17 to 23 with javac found via JAVA_HOME or /usr/lib/jvm (apt-get install openjdk-17-jdk-headless); \`latency\` on a JDK 17/21 JVM then reports it unavailable.`);
    return;
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'javalatency-'));
  try {
    const exports = ['jdk.internal.org.objectweb.asm', 'jdk.internal.org.objectweb.asm.commons'].flatMap((p) => ['--add-exports', `java.base/${p}=ALL-UNNAMED`]);
    const c = spawnSync(path.join(home, 'bin', 'javac'), ['-Xlint:-options', '-source', '17', '-target', '17', ...exports, '-d', path.join(work, 'classes'), ...sources], { stdio: 'inherit' });
    if (c.status !== 0) {
      console.error('build: compiling the Java latency agent failed');
      process.exit(1);
    }
    fs.writeFileSync(path.join(work, 'MANIFEST.MF'), MANIFEST);
    const tmp = `${out}.tmp${process.pid}`;
    const j = spawnSync(path.join(home, 'bin', 'jar'), ['--create', '--file', tmp, '--manifest', path.join(work, 'MANIFEST.MF'), '-C', path.join(work, 'classes'), '.'], { stdio: 'inherit' });
    if (j.status !== 0) {
      console.error('build: packing the Java latency agent failed');
      process.exit(1);
    }
    // rename, never rewrite in place: a JVM may have the old jar open
    fs.renameSync(tmp, out);
    console.log(`build: Java latency agent → dist/${JAVALATENCY_FILE} (javac of ${home})`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
