// `ebpf-studio doctor [--pid P] [--json]`: what this machine allows, and what to fix.
import fs from 'node:fs';
import { defaultAssetDir, loadAddon } from '../../sys/addon';
import { gatherCapabilities } from '../../tracers/capabilities';
import { INSTALL_ROOT, installReport } from '../../privilege/installPlan';

function describeMissing(missing: string[]): string {
  const what: string[] = [];
  if (missing.some((m) => m.includes('jvmagent'))) what.push('--java agent (Java frames through the JVM agent)');
  if (missing.some((m) => m.includes('javalatency'))) what.push('latency of Java methods on JDK 17 to 23');
  if (missing.some((m) => m.includes('preload'))) what.push('preload leak mode');
  if (missing.some((m) => m.includes('inject'))) what.push('leak tracing of a running process by injection');
  if (missing.some((m) => m.includes('runner'))) what.push('Run BPF Loader / bpftrace / Run BPF Program / Load and Verify');
  if (missing.some((m) => m.includes('helper') || m.includes('.node') || m.includes('bpf'))) what.push('tracing');
  if (missing.some((m) => m.includes('launch'))) what.push('Run with Leak Tracing');
  return what.join(', ') || 'features';
}
import { checkPid, mapsOrExplain } from '../../sys/proc/processes';
import { checkBinary, FRAME_POINTER_DISTROS, lacksFramePointers, type BinaryReport } from '../../sys/elf/binaryChecks';
import type { Command } from '../command';
import { parse, pidFlag } from '../args';
import { describeUnwind, unwindModules } from '../../tracers/profile/unwindModules';
import type { UnwindModuleInfo } from '../../protocol/profile';

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'report what this machine allows (BTF, privileges, attach kinds, JDKs) and what to fix',
  usage: 'ebpf-studio doctor [--pid PID] [--json]',
  async run(argv, io) {
    const { values } = parse(argv, { json: { type: 'boolean' }, pid: { type: 'string' }, help: { type: 'boolean', short: 'h' } });
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    const pid = pidFlag(values.pid);
    const assetDir = defaultAssetDir();
    let addonError: string | undefined;
    let addon;
    try {
      addon = loadAddon(assetDir);
    } catch (e) {
      addonError = (e as Error).message;
    }
    const caps = gatherCapabilities(addon, assetDir, addonError);
    // The root-owned install a non-root editor reaches root through: what it lacks silently falls back.
    const install = installReport(INSTALL_ROOT, assetDir);
    if (install.version && install.missing.length) {
      caps.advice.push(`the root-owned install ${install.dir} lacks ${install.missing.join(', ')}: without them a non-root user gets no ${describeMissing(install.missing)}. Build with a JDK and a C compiler (npm run build), then install again: sudo ebpf-studio install-helper`);
    }
    const binaries: BinaryReport[] = [];
    let unwind: UnwindModuleInfo[] | undefined;
    if (pid !== undefined) {
      checkPid(pid, false);
      const seen = new Set<string>();
      for (const m of mapsOrExplain(pid)) {
        if (!m.path.startsWith('/') || !m.perms.includes('x') || seen.has(m.path)) continue;
        seen.add(m.path);
        try {
          if (!fs.statSync(m.path).isFile()) continue;
          binaries.push(checkBinary(m.path));
        } catch {
          /* not ELF or unreadable */
        }
      }
      const exe = fs.readlinkSync(`/proc/${pid}/exe`);
      for (const b of binaries) {
        // The profiler unwinds by CFI (its default, in the kernel or --unwind dwarf): a module without frame
        // pointers is a problem only without CFI too, or for tools that walk frame pointers.
        if (b.path === exe && !b.debugInfo) caps.advice.push(`${b.path} has no debug info: frames show module+offset, not file:line. Rebuild with -g.`);
        if (!lacksFramePointers(b)) continue;
        if (!b.cfi) {
          caps.advice.push(`${b.path} has neither frame pointers nor CFI (.eh_frame/.debug_frame): stacks through it end there. ${b.path === exe ? 'Rebuild it with -fno-omit-frame-pointer or without -fno-asynchronous-unwind-tables.' : 'Install its debug-symbols package.'}`);
        } else if (b.path === exe) {
          caps.advice.push(`${b.path} has no frame pointers: the profiler unwinds it by CFI (the default: its unwind tables walked in the kernel, or --unwind dwarf); leak stacks in uprobe mode walk frame pointers and lose its callers (rebuild with -fno-omit-frame-pointer for those).`);
        } else if (/\/lib(c|stdc\+\+)[.-]/.test(b.path)) {
          caps.advice.push(`${b.path} has no frame pointers: the profiler unwinds it by CFI (the default); tools that walk frame pointers lose the callers above it (distributions that build it with frame pointers: ${FRAME_POINTER_DISTROS}).`);
        }
      }
      if (addon && !addonError) {
        try {
          const u = new addon.Unwinder(pid);
          try {
            unwind = unwindModules(u.modules());
          } finally {
            u.close();
          }
        } catch (e) {
          caps.advice.push(`cannot read the unwinding tables of pid ${pid}: ${(e as Error).message}`);
        }
      }
    }
    if (values.json) {
      io.out(JSON.stringify(pid !== undefined ? { ...caps, install, pid, binaries, unwind } : { ...caps, install }, null, 2));
      return 0;
    }
    const yes = (b: boolean) => (b ? 'yes' : 'no');
    const lines = [
      `kernel        ${caps.kernelRelease} (${caps.arch})`,
      `BTF           ${yes(caps.btf)}`,
      `root          ${yes(caps.root)}${caps.root ? '' : `  capabilities: ${caps.capabilities.join(', ') || 'none'}`}`,
      `libbpf        ${caps.libbpf}`,
      `install       ${install.version ? `${install.dir}: ${install.missing.length ? `missing ${install.missing.join(', ')}` : 'complete (helper, runner, addon, launcher, Java agent, leak interposer and its injector, BPF objects)'}` : `none in ${INSTALL_ROOT} (needed only when the editor is not root: sudo ebpf-studio install-helper)`}`,
      `tracefs       ${caps.tracefs ? 'mounted' : 'not mounted'}`,
      ...(caps.container ? [`container     inside ${caps.container.runtime}: ${caps.container.privileged ? 'privileged' : 'unprivileged (BPF refused)'}, ${caps.container.ownPidNamespace ? 'own pid namespace (host processes not visible)' : "host's pid namespace"}`] : []),
      'attach kinds:',
      ...Object.entries(caps.attach).map(([k, v]) => `  ${k.padEnd(11)} ${v.ok ? 'works' : `no — ${v.error}`}`),
      'JDKs:',
      ...(caps.jdks.length ? caps.jdks.map((j) => `  ${j.home}  ${j.usdt ? `USDT probes: ${j.probeCount}` : 'no USDT probes'}`) : ['  none found']),
    ];
    if (pid !== undefined) {
      lines.push(`binaries of pid ${pid}:`);
      for (const b of binaries) {
        const fp = b.framePointerShare === undefined ? 'frame pointers: ?' : `frame pointers: ${Math.round(b.framePointerShare * 100)}%`;
        lines.push(`  ${b.path}  debug info: ${yes(b.debugInfo)}  ${fp}  CFI: ${yes(b.cfi === true)}`);
      }
      if (unwind) {
        lines.push(`how the profiler unwinds pid ${pid} by CFI (--unwind dwarf; the default walks the same .eh_frame as tables in the kernel):`);
        for (const m of unwind) lines.push(`  ${describeUnwind(m)}`);
      }
    }
    lines.push(caps.advice.length ? 'advice:' : 'advice: none, everything needed is here');
    for (const a of caps.advice) lines.push(`  - ${a}`);
    io.out(lines.join('\n'));
    return 0;
  },
};
