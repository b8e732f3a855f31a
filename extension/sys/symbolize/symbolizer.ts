// The shared symbolizer of the memleak tracer and the CPU profiler. Native frames: address →
// mapping → file offset → ELF vaddr, then names, file:line:column and inlined frames from one
// long-lived llvm-symbolizer (our reading of the ELF symbols where it gives no name). Kernel frames
// from /proc/kallsyms, JIT frames from the process's perf map. Results are cached per module
// (build-id, else file identity) and vaddr, so repeated stacks cost a map lookup.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FRAME_POINTER_DISTROS } from '../elf/binaryChecks';
import { findMapping, type Mapping } from '../proc/maps';
import { StudioError, inputError } from '../../protocol/errors';
import { readKallsyms, type Kallsyms } from './kallsyms';
import { LlvmSymbolizer, findLlvmSymbolizer, type LlvmRequest } from './llvmSymbolizer';
import { ModuleFile } from './moduleFile';
import { ownerPackage } from './packageOwner';
import { debugInfoRemedy } from '../../model/debugAdvice';
import { CapturedProcess, type ModuleRegistry } from './processImage';
import { hex, type ProcessImage, type SymResult } from './types';
import type { Frame } from '../../protocol/frames';
import { requester } from '../ownership';

export interface SymbolizerOptions {
  llvmSymbolizerPath?: string;
  log?(m: string): void;
  /** where build-id debug files live; default /usr/lib/debug (llvm-symbolizer's default too) */
  debugFileDirectories?: string[];
  /** for tests: a kallsyms file other than /proc/kallsyms */
  kallsymsPath?: string;
  /** whom the frames are for; default the requester (sys/ownership.ts) */
  viewerUid?: number;
}

export interface UserOptions {
  /** per address: true for return addresses (all but the leaf), looked up at addr-1 */
  returnAddresses?: boolean[];
}

const EMPTY: SymResult = Object.freeze({});

/** cached results across all modules, ~150 bytes each */
const MAX_CACHED = 1_000_000;

/** module → lookup vaddr → indices of the frames waiting for it */
type Misses = Map<ModuleFile, Map<number, number[]>>;

export class Symbolizer implements ModuleRegistry {
  private readonly log: (m: string) => void;
  private readonly debugDirs: string[];
  private readonly llvm?: LlvmSymbolizer;
  private readonly llvmMissing?: string;
  private readonly byIdentity = new Map<string, ModuleFile>();
  /** cacheKey → vaddr (as a number: ELF vaddrs stay far below 2^53) → result */
  private readonly results = new Map<string, Map<number, SymResult>>();
  private cachedCount = 0;
  private kallsyms?: Kallsyms;
  private kallsymsError?: string;
  /** vdso images by content digest (identical for all processes of one kernel and ABI) */
  private readonly vdsos = new Map<string, ModuleFile>();
  private disposed = false;
  /** a non-root requester: an address in data (a stack walk's garbage) is not shown as module+offset */
  private readonly dataIsUnknown: boolean;

  constructor(private readonly opts: SymbolizerOptions = {}) {
    this.log = opts.log ?? (() => {});
    this.dataIsUnknown = (opts.viewerUid ?? requester().uid) !== 0;
    this.debugDirs = opts.debugFileDirectories ?? ['/usr/lib/debug'];
    const exe = findLlvmSymbolizer(opts.llvmSymbolizerPath);
    if (exe) {
      const extra = opts.debugFileDirectories ? opts.debugFileDirectories.map((d) => `--debug-file-directory=${d}`) : [];
      this.llvm = new LlvmSymbolizer(exe, extra, this.log);
    } else {
      this.llvmMissing = 'llvm-symbolizer not found (install the llvm package)';
    }
  }

  /**
   * Reads /proc/PID/maps now and keeps open handles on the mapped executables, so the process
   * may exit before symbolization. Throws StudioError if the pid is gone or unreadable.
   */
  captureProcess(pid: number): ProcessImage {
    this.checkAlive();
    return new CapturedProcess(pid, this);
  }

  /** Re-reads the JVM perf map (/tmp/perf-PID.map, inside the process's mount namespace). */
  refreshPerfMap(image: ProcessImage): void {
    captured(image).refreshPerfMap();
  }

  /**
   * Re-reads /proc/PID/maps of a still-running process and opens newly mapped executables
   * (libraries loaded after the capture, e.g. a process captured at launch, or dlopen). Mappings
   * that went away are kept, so older stacks still resolve. symbolizeUser does this by itself
   * when an address lies outside every captured executable mapping.
   */
  refreshMaps(image: ProcessImage): boolean {
    this.checkAlive();
    return captured(image).refreshMaps(this, true);
  }

  async symbolizeUser(image: ProcessImage, addrs: bigint[], opts: UserOptions = {}): Promise<Frame[]> {
    this.checkAlive();
    const img = captured(image);
    const out: Frame[] = new Array(addrs.length);
    const misses: Misses = new Map();
    const stale: number[] = [];
    for (let i = 0; i < addrs.length; i++) {
      if (!this.userFrame(img, addrs[i], opts.returnAddresses?.[i] === true, i, out, misses)) stale.push(i);
    }
    // Code addresses lie in executable memory: one that does not was mapped after the capture.
    if (stale.length && img.refreshMaps(this, false)) {
      for (const i of stale) this.userFrame(img, addrs[i], opts.returnAddresses?.[i] === true, i, out, misses);
    }
    if (misses.size) await this.resolveMisses(misses, out);
    return out;
  }

  /**
   * Extension beyond the tracers' needs: symbolizes link-time vaddrs of an ELF file on disk
   * (tests, offline stacks). Frames carry module=path and no address arithmetic.
   */
  async symbolizeFile(file: string, vaddrs: bigint[], opts: UserOptions = {}): Promise<Frame[]> {
    this.checkAlive();
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch (e) {
      throw inputError(`cannot open ${file} (${(e as NodeJS.ErrnoException).code}): give the path of a readable ELF file`);
    }
    const mod = this.adopt(fd, file);
    if (mod.problem) throw inputError(`${file}: ${mod.problem}`);
    const out: Frame[] = [];
    const misses: Misses = new Map([[mod, new Map()]]);
    vaddrs.forEach((v, i) => {
      out.push({ address: hex(v), module: file, kind: 'native' });
      const key = Number(opts.returnAddresses?.[i] && v > 0n ? v - 1n : v);
      const cached = this.cacheFor(mod).get(key);
      if (cached) fill(out[i], cached);
      else {
        const m = misses.get(mod)!;
        const idx = m.get(key);
        if (idx) idx.push(i);
        else m.set(key, [i]);
      }
    });
    await this.resolveMisses(misses, out);
    return out;
  }

  async symbolizeKernel(addrs: bigint[], opts: UserOptions = {}): Promise<Frame[]> {
    this.checkAlive();
    const ks = this.loadKallsyms();
    return addrs.map((addr, i) => {
      const frame: Frame = { address: hex(addr), module: '[kernel]', kind: 'kernel' };
      if (!ks || ks.hidden) return frame;
      const hit = ks.table.lookup(opts.returnAddresses?.[i] && addr > 0n ? addr - 1n : addr);
      if (hit) frame.function = hit.value.name;
      return frame;
    });
  }

  /**
   * Things said once per module (debug info, frame pointers) and once per symbolizer. `stacks`
   * says how the caller's stacks were walked: with 'cfi' a module without frame pointers is only
   * a problem when it has no CFI either; with 'fp' (the default) `fpFix` names the caller's own
   * remedy (e.g. the profiler's CFI mode).
   */
  warnings(image?: ProcessImage, opts: { stacks?: 'fp' | 'cfi'; fpFix?: string } = {}): string[] {
    const out: string[] = [];
    if (this.llvmMissing) out.push(`${this.llvmMissing}: native frames show function names from ELF symbols, without file:line`);
    else if (this.llvm?.failure && this.llvm.failure !== 'disposed') {
      out.push(`${this.llvm.failure}: native frames show function names from ELF symbols, without file:line`);
    }
    if (this.kallsymsError) out.push(this.kallsymsError);
    else if (this.kallsyms?.hidden) {
      out.push('/proc/kallsyms shows only zero addresses (no privilege, or kernel.kptr_restrict=2): kernel frames show addresses only; run as root');
    }
    if (!image) return out;
    const img = captured(image);
    for (const [file, why] of img.unreadable) out.push(`cannot open ${file} (${why}): its frames show module+offset`);
    for (const mod of img.touched) {
      // The vdso is the kernel's: nothing for the user to rebuild or install.
      if (mod.problem || mod.displayPath === '[vdso]') continue;
      const name = mod.displayPath;
      if (!mod.hasDebugInfo()) {
        // a system library gets the package that carries its symbols, never "rebuild with -g"
        const own = name === img.exePath || /^\/(home|root|tmp|work|srv)\//.test(name);
        const remedy = debugInfoRemedy({ path: name, own, ownerPackage: own ? undefined : ownerPackage(name) });
        out.push(
          mod.hasSymbols()
            ? `no debug info in ${name}: its frames show function names but no file:line (${remedy})`
            : `no debug info or symbols in ${name}: its frames show module+offset (${remedy})`,
        );
      }
      if (mod.lacksFramePointers()) {
        const own = mod.displayPath === img.exePath;
        if (opts.stacks === 'cfi') {
          if (!mod.hasCfi()) {
            out.push(`${name} has neither frame pointers nor call frame information (.eh_frame/.debug_frame): stacks through it end there (${own ? 'rebuild it without -fno-asynchronous-unwind-tables, or with -fno-omit-frame-pointer' : 'install its debug-symbols package, which carries .debug_frame'})`);
          }
        } else {
          const system = /\/lib(c|m|stdc\+\+|gcc_s|pthread)[.-]/.test(name);
          const fix = opts.fpFix ? `; ${opts.fpFix}` : '';
          out.push(
            own
              ? `${name} has no frame pointers: stacks through it are likely truncated (rebuild with -fno-omit-frame-pointer, e.g. CFLAGS="-g -fno-omit-frame-pointer"${fix})`
              : system
                ? `${name} is built without frame pointers, as on most distributions: callers above its frames are lost when walking frame pointers${fix}; distributions that build it with frame pointers: ${FRAME_POINTER_DISTROS}`
                : `${name} has no frame pointers: stacks through it are likely truncated (callers above its frames may be missing; rebuild it with -fno-omit-frame-pointer${fix})`,
          );
        }
      }
    }
    if (img.anonymousCodeSeen && !img.perfMap) {
      out.push(
        `no perf map for pid ${img.pid} (/tmp/perf-${img.pid}.map): JIT-compiled frames show as [unknown] (for a JVM the profiler asks for it through Compiler.perfmap)`,
      );
    }
    return out;
  }

  /** Ends the llvm-symbolizer child and releases every held file. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.llvm?.dispose();
    for (const mod of this.byIdentity.values()) {
      try {
        fs.closeSync(mod.fd);
      } catch {
        /* already closed */
      }
    }
    this.byIdentity.clear();
    this.results.clear();
    this.vdsos.clear();
  }

  // ModuleRegistry ---------------------------------------------------------------------------

  adopt(fd: number, displayPath: string): ModuleFile {
    const st = fs.fstatSync(fd);
    const identity = `${st.dev}:${st.ino}:${st.mtimeMs}:${st.size}`;
    const known = this.byIdentity.get(identity);
    if (known) {
      fs.closeSync(fd);
      return known;
    }
    const mod = new ModuleFile(fd, identity, displayPath, this.debugDirs);
    this.byIdentity.set(identity, mod);
    return mod;
  }

  vdso(bytes: Buffer): ModuleFile | undefined {
    const digest = crypto.createHash('sha256').update(bytes).digest('hex');
    const known = this.vdsos.get(digest);
    if (known) return known;
    // ElfFile and llvm-symbolizer read files: write the image out, keep only our fd to it.
    const file = path.join(os.tmpdir(), `ebpf-studio-vdso-${process.pid}-${digest.slice(0, 16)}.so`);
    let fd: number;
    try {
      fs.writeFileSync(file, bytes, { mode: 0o600 });
      fd = fs.openSync(file, 'r');
    } catch (e) {
      this.log(`cannot keep a copy of the vdso: ${(e as Error).message}`);
      return undefined;
    } finally {
      fs.rmSync(file, { force: true });
    }
    const mod = this.adopt(fd, '[vdso]');
    this.vdsos.set(digest, mod);
    return mod;
  }

  // internals -------------------------------------------------------------------------------

  private checkAlive(): void {
    if (this.disposed) throw new StudioError('internal', 'the symbolizer was disposed: create a new Symbolizer');
  }

  private cacheFor(mod: ModuleFile): Map<number, SymResult> {
    let c = this.results.get(mod.cacheKey);
    if (!c) this.results.set(mod.cacheKey, (c = new Map()));
    return c;
  }

  /** Fills out[i] (from the cache if it can, else records a miss); false when the capture looks stale. */
  private userFrame(img: CapturedProcess, addr: bigint, isReturn: boolean, i: number, out: Frame[], misses: Misses): boolean {
    const m = findMapping(img.maps, addr);
    if (!m || (!m.path.startsWith('/') && m.path !== '[vdso]')) {
      out[i] = this.anonymousFrame(img, addr, isReturn, m);
      return out[i].module !== '[unknown]' || (m !== undefined && m.perms[2] === 'x');
    }
    if (m.perms[2] !== 'x' && this.dataIsUnknown) {
      out[i] = { address: hex(addr), module: '[unknown]', kind: 'native' };
      return false;
    }
    const fileOffset = addr - m.start + m.offset;
    const frame: Frame = { address: hex(addr), module: m.path, offset: hex(fileOffset), kind: 'native' };
    out[i] = frame;
    if (m.perms[2] !== 'x') return false;
    const mod = img.modules.get(m);
    if (mod?.buildId) frame.buildId = mod.buildId;
    if (!mod || mod.problem) return true;
    img.touched.add(mod);
    const vaddr = mod.offsetToVaddr(fileOffset);
    if (vaddr === undefined) return true;
    const key = Number(isReturn && vaddr > 0n ? vaddr - 1n : vaddr);
    const cached = this.cacheFor(mod).get(key);
    if (cached) {
      fill(frame, cached);
      return true;
    }
    let perModule = misses.get(mod);
    if (!perModule) misses.set(mod, (perModule = new Map()));
    const idx = perModule.get(key);
    if (idx) idx.push(i);
    else perModule.set(key, [i]);
    return true;
  }

  private anonymousFrame(img: CapturedProcess, addr: bigint, isReturn: boolean, m: Mapping | undefined): Frame {
    if (m?.perms[2] === 'x') img.anonymousCodeSeen = true;
    const hit = img.perfMap?.table.lookup(isReturn ? addr - 1n : addr);
    if (hit) return { address: hex(addr), module: '[jit]', function: hit.value.name, kind: hit.value.kind };
    return { address: hex(addr), module: '[unknown]', kind: 'native' };
  }

  private async resolveMisses(misses: Misses, out: Frame[]): Promise<void> {
    const reqs: LlvmRequest[] = [];
    const targets: { mod: ModuleFile; key: number; idx: number[] }[] = [];
    for (const [mod, keys] of misses) {
      for (const [key, idx] of keys) {
        reqs.push({ module: mod.fdPath, vaddr: BigInt(key) });
        targets.push({ mod, key, idx });
      }
    }
    const answers = this.llvm?.usable ? await this.llvm.symbolize(reqs) : { results: reqs.map(() => undefined), complete: false };
    // Disposed meanwhile: our fds are closed (and their numbers may be reused), read nothing more.
    if (this.disposed) return;
    for (let j = 0; j < targets.length; j++) {
      const { mod, key, idx } = targets[j];
      let r = answers.results[j];
      const unanswered = r === undefined && !answers.complete;
      if (!r?.function) {
        // No name from llvm-symbolizer (missing, or the address is outside every DWARF unit, as
        // with libgcc's __addtf3 inside libc, and then it does not consult the symbol table):
        // our own reading of .symtab/.dynsym, debug file included. Not demangled.
        const hit = mod.symbols().lookup(BigInt(key));
        if (hit) r = { ...r, function: hit.value };
      }
      const result = r ?? EMPTY;
      // An address a crashed child never answered may resolve fully on the next try, unless
      // llvm-symbolizer is gone for good.
      if (!unanswered || !this.llvm?.usable) this.remember(mod, key, result);
      for (const i of idx) fill(out[i], result);
    }
  }

  private remember(mod: ModuleFile, key: number, r: SymResult): void {
    // Bounds memory over long sessions; a full reset is rare and costs one cold pass.
    if (++this.cachedCount > MAX_CACHED) {
      this.results.clear();
      this.cachedCount = 1;
    }
    this.cacheFor(mod).set(key, r);
  }

  private loadKallsyms(): Kallsyms | undefined {
    if (this.kallsyms || this.kallsymsError) return this.kallsyms;
    const p = this.opts.kallsymsPath ?? '/proc/kallsyms';
    try {
      this.kallsyms = readKallsyms(p);
    } catch (e) {
      this.kallsymsError = `cannot read ${p} (${(e as NodeJS.ErrnoException).code ?? e}): kernel frames show addresses only`;
    }
    return this.kallsyms;
  }
}

function captured(image: ProcessImage): CapturedProcess {
  if (!(image instanceof CapturedProcess)) {
    throw new StudioError('internal', 'not a ProcessImage from Symbolizer.captureProcess(): capture the process first');
  }
  return image;
}

function fill(frame: Frame, r: SymResult): void {
  if (r.function !== undefined) frame.function = r.function;
  if (r.file !== undefined) frame.file = r.file;
  if (r.line !== undefined) frame.line = r.line;
  if (r.column !== undefined) frame.column = r.column;
  if (r.inlined) frame.inlined = r.inlined.map((f) => ({ ...f }));
}
