// What this machine allows: kernel, BTF, privileges, and which attach kinds really work. Each
// kind is probed by loading and attaching a do-nothing program (bpf/doctor.bpf.o), never
// assumed from the kernel config.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AttachKind, AttachProbe, Capabilities } from '../protocol/protocol';
import type { Addon } from '../sys/addon';
import { findJdks } from '../sys/proc/processes';
import { mappedFiles, readMaps } from '../sys/proc/maps';
import { lossAdvice, readLossHistory } from './lossHistory';
import { ensureTracefs } from '../sys/tracefs';
import { INSTALL_ROOT, installReport } from '../privilege/installPlan';
import { containerLimits, insideContainer } from '../sys/proc/insideContainer';

const CAP_NAMES: Record<number, string> = {
  0: 'CAP_CHOWN', 1: 'CAP_DAC_OVERRIDE', 2: 'CAP_DAC_READ_SEARCH', 5: 'CAP_KILL', 6: 'CAP_SETGID', 7: 'CAP_SETUID',
  12: 'CAP_NET_ADMIN', 19: 'CAP_SYS_PTRACE', 21: 'CAP_SYS_ADMIN', 24: 'CAP_SYS_RESOURCE', 38: 'CAP_PERFMON', 39: 'CAP_BPF',
};

export function effectiveCapabilities(statusText = fs.readFileSync('/proc/self/status', 'utf8')): string[] {
  const m = /^CapEff:\s+([0-9a-f]+)/m.exec(statusText);
  if (!m) return [];
  const mask = BigInt('0x' + m[1]);
  const out: string[] = [];
  for (const [bit, name] of Object.entries(CAP_NAMES)) if (mask & (1n << BigInt(bit))) out.push(name);
  return out;
}

const KINDS: { kind: AttachKind; program: string }[] = [
  { kind: 'tracepoint', program: 'probe_tracepoint' },
  { kind: 'raw_tp', program: 'probe_raw_tp' },
  { kind: 'tp_btf', program: 'probe_tp_btf' },
  { kind: 'uprobe', program: 'probe_uprobe' },
  { kind: 'usdt', program: 'probe_usdt' },
  { kind: 'perf_event', program: 'probe_perf_event' },
  { kind: 'kprobe', program: 'probe_kprobe' },
  { kind: 'fentry', program: 'probe_fentry' },
];

function libcPath(): string | undefined {
  try {
    return mappedFiles(readMaps(process.pid), /^libc[.-]/)[0];
  } catch {
    return undefined;
  }
}

/** The probe's failure: libbpf's text, and what it means here where that is known. */
function explain(kind: AttachKind, e: unknown): AttachProbe {
  const err = e as { code?: string; message?: string };
  const error = err.message ?? String(e);
  const why = meaning(kind, err.code);
  return why ? { ok: false, error: `${error}: ${why}`, why } : { ok: false, error };
}

function meaning(kind: AttachKind, code: string | undefined): string | undefined {
  if ((kind === 'fentry' || kind === 'kprobe') && process.geteuid?.() === 0 && (code === 'EPERM' || code === 'ENOTSUPP' || code === 'EOPNOTSUPP')) {
    return `this kernel refuses ${kind} programs even for root (no BPF trampoline/kprobe support); eBPF Studio does not need them`;
  }
  if (code === 'EPERM' || code === 'EACCES') {
    if (kind === 'uprobe' || kind === 'usdt') return 'uprobes and USDT need root (CAP_SYS_ADMIN), CAP_BPF+CAP_PERFMON are not enough';
    return 'needs root or CAP_BPF+CAP_PERFMON';
  }
  if (kind === 'kprobe' && (code === 'ENOENT' || code === 'EOPNOTSUPP' || code === 'ENODEV' || code === 'EINVAL')) {
    return 'this kernel has no kprobes (CONFIG_KPROBES off); eBPF Studio does not need them';
  }
  return undefined;
}

export function probeAttachKinds(addon: Addon, assetDir: string, usdtBinary?: string): Record<AttachKind, AttachProbe> {
  const objPath = path.join(assetDir, 'bpf', 'doctor.bpf.o');
  const result = {} as Record<AttachKind, AttachProbe>;
  for (const { kind, program } of KINDS) {
    let obj: InstanceType<Addon['BpfObject']> | undefined;
    try {
      obj = new addon.BpfObject(objPath);
      for (const p of obj.programs()) obj.setAutoload(p.name, p.name === program);
      obj.load();
      switch (kind) {
        case 'tracepoint':
          ensureTracefs();
          obj.attachTracepoint(program, 'sched', 'sched_process_exec');
          break;
        case 'uprobe': {
          const libc = libcPath();
          if (!libc) throw new Error('cannot find libc in /proc/self/maps');
          obj.attachUprobe(program, { binary: libc, symbol: 'getpid', pid: process.pid, retprobe: false });
          break;
        }
        case 'usdt':
          if (!usdtBinary) {
            result[kind] = { ok: false, error: 'not tested: no binary with USDT probes found (install openjdk-17-jdk to test); USDT attaches through uprobes' };
            continue;
          }
          obj.attachUsdt(program, { binary: usdtBinary, provider: 'hotspot', name: 'gc__end', pid: -1 });
          break;
        case 'perf_event':
          obj.attachPerfEvent(program, { type: 'cpu-clock', frequency: 1, cpu: 0 });
          break;
        default:
          obj.attach(program);
      }
      result[kind] = { ok: true };
    } catch (e) {
      result[kind] = explain(kind, e);
    } finally {
      obj?.close();
    }
  }
  return result;
}

export function gatherCapabilities(addon: Addon | undefined, assetDir: string, addonError?: string): Capabilities {
  const btf = fs.existsSync('/sys/kernel/btf/vmlinux');
  const caps = effectiveCapabilities();
  const root = process.geteuid?.() === 0;
  const jdks = findJdks();
  const tracefs = ensureTracefs();
  const usdtJdk = jdks.find((j) => j.usdt);
  const attach = addon
    ? probeAttachKinds(addon, assetDir, usdtJdk?.libjvm)
    : (Object.fromEntries(KINDS.map((k) => [k.kind, { ok: false, error: addonError ?? 'native addon not loaded' }])) as Record<AttachKind, AttachProbe>);

  const advice: string[] = [];
  if (!btf) advice.push('The kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE programs cannot load. Use a kernel built with CONFIG_DEBUG_INFO_BTF=y.');
  const container = insideContainer();
  // Inside a container uid 0 is not enough: the runtime decides which capabilities root keeps.
  const hasBpfCaps = container ? container.privileged : root || (caps.includes('CAP_BPF') && caps.includes('CAP_PERFMON'));
  advice.push(...containerLimits(container));
  // A privileged container gets an empty /sys/kernel/tracing and often has no mount(8) to fill it.
  if (container?.privileged && !tracefs) advice.push('tracefs is not mounted in this container: tracepoints named through it (bpftrace scripts, Run BPF Loader, tracefs-based probes) fail. Add "--mount", "type=bind,source=/sys/kernel/tracing,target=/sys/kernel/tracing" to the Dev Container\'s runArgs (docs/editor.md, "In a Dev Container").');
  if (container && !container.privileged) {
    /* said by containerLimits: sudo cannot help in here */
  } else if (!hasBpfCaps) {
    advice.push('No privilege to load BPF: run the CLI with sudo, or let the extension start its helper with pkexec/sudo (setting ebpfStudio.helper.privilege). CAP_BPF+CAP_PERFMON suffice for the profiler and run-queue latency; memory leaks and Java GC need root (uprobes/USDT).');
  } else if (!root && !caps.includes('CAP_SYS_ADMIN')) {
    advice.push('Without root (CAP_SYS_ADMIN), uprobes and USDT fail: Java GC and memory-leak tracing will not attach; the profiler and run-queue latency work.');
  }
  if (addonError) advice.push(`The native addon did not load (${addonError}): run "npm run build".`);
  for (const j of jdks) {
    if (!j.usdt) advice.push(`JDK ${j.home} has no USDT probes in ${j.libjvm}: its GC cannot be traced. Use a JDK built with --enable-dtrace (Debian/Ubuntu openjdk packages are).`);
  }
  for (const k of ['tracepoint', 'raw_tp', 'uprobe', 'perf_event'] as AttachKind[]) {
    if (hasBpfCaps && attach[k] && !attach[k].ok) advice.push(`${k} attach fails here: ${attach[k].error}`);
  }
  advice.push(...lossAdvice(readLossHistory()));
  return {
    kernelRelease: os.release(),
    arch: os.arch(),
    btf,
    root,
    capabilities: caps,
    libbpf: addon ? addon.libbpfVersion() : 'unavailable',
    attach,
    jdks,
    tracefs,
    advice,
    install: (({ root, version, missing }) => ({ dir: root, version, missing }))(installReport(INSTALL_ROOT, assetDir)),
    ...(container ? { container } : {}),
  };
}
