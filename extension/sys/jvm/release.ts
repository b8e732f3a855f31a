// A running JVM's JDK version, from its JDK's `release` file read through /proc/PID/root (so a
// JVM in a container reports its own JDK). Used by the process listing (the editor's pickers
// show or refuse JDK-dependent choices) and by the Java agent tracers (their refusals).
import fs from 'node:fs';
import path from 'node:path';

/** The JDK's version from its release file ("17.0.9", "1.8.0_392"), read through /proc/PID/root. */
export function jdkVersion(pid: number, javaHome: string): string | undefined {
  for (const home of [javaHome, path.dirname(javaHome)]) {
    try {
      const text = fs.readFileSync(`/proc/${pid}/root${home}/release`, 'utf8');
      const m = /^JAVA_VERSION="?([^"\n]+)"?/m.exec(text);
      if (m) return m[1];
    } catch {
      /* JDK 8's libjvm sits one level deeper (jre/lib/amd64/server): try the parent */
    }
  }
  return undefined;
}

/** The feature release of a JDK version string: "1.8.0_392" → 8, "17.0.9" → 17, "25" → 25. */
export function jdkFeature(version: string): number {
  const parts = version.split(/[._+-]/).map(Number);
  return parts[0] === 1 ? parts[1] : parts[0];
}
