// What to tell a user whose frames lack file:line because a module has no debug info: the
// package that carries its debug symbols for the runtime at hand (Debian's openjdk-17-dbg for its
// JDK's libjvm.so, libc6-dbg for glibc, <package>-dbgsym from the debug archive for the rest),
// "rebuild with -g" only for the user's own programs, never for a system library. Pure: the owning
// package comes from the caller (sys/symbolize/packageOwner.ts asks dpkg).

export interface ModuleOrigin {
  /** the module's path as the process maps it */
  path: string;
  /** the Debian package that owns the file ("openjdk-17-jre-headless"), when dpkg knows it */
  ownerPackage?: string;
  /** the profiled program itself, or a file under the workspace or a home directory */
  own: boolean;
}

/** Debian packages whose debug symbols ship in a hand-made -dbg package rather than the automatic -dbgsym one. */
export function debugPackageFor(owner: string): string {
  const jdk = /^openjdk-(\d+)-(jre|jre-headless|jdk|jdk-headless)$/.exec(owner);
  if (jdk) return `openjdk-${jdk[1]}-dbg`;
  if (owner === 'libc6' || owner === 'libc6-amd64' || owner === 'libc6-i386') return 'libc6-dbg';
  return `${owner}-dbgsym`;
}

/** A file of the system or of a third party (packaged, or under the usual system and vendor trees). */
export function isSystemModule(m: ModuleOrigin): boolean {
  if (m.ownerPackage) return true;
  if (m.own) return false;
  return /^\/(usr|lib|lib32|lib64|libx32|opt|snap|nix)\//.test(m.path);
}

/** What follows "no debug info in X: its frames show …" — how to get file:line, in parentheses. */
export function debugInfoRemedy(m: ModuleOrigin): string {
  if (m.ownerPackage) {
    const pkg = debugPackageFor(m.ownerPackage);
    const archive = pkg.endsWith('-dbgsym') ? ', from the debian-debug archive (https://wiki.debian.org/HowToGetABacktrace)' : '';
    return `for file:line install its debug symbols: apt install ${pkg}${archive}`;
  }
  if (isSystemModule(m)) {
    const jdk = /\/lib\/server\/libjvm\.so$/.test(m.path);
    return jdk
      ? 'this JDK is not from a distribution package and ships no debug symbols; a JDK installed with apt has openjdk-N-dbg'
      : 'for file:line install the debug symbols its vendor or distribution provides (e.g. through debuginfod)';
  }
  return 'rebuild it with -g for file:line';
}
