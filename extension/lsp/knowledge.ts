// Loads what the server knows about BPF from this machine: helper docs from the installed
// libbpf header and kernel structs/map types from a vmlinux.h (given by the client, or generated
// with bpftool into the cache folder once), the kernel's raw BTF (offsets, functions) and its
// attach targets (kallsyms, tracefs). Each piece loads lazily and is kept for the session.
import fs from 'node:fs';
import path from 'node:path';
import { loadAttachTargets, type AttachTargets } from '../authoring/attachTargets';
import { parseHelperDefs, type HelperDef } from '../authoring/helperDefs';
import { loadKernelBtf, type KernelBtf } from '../authoring/kernelBtf';
import { KernelStructs } from '../authoring/kernelStructs';
import { ensureVmlinux } from '../authoring/toolchain';
import type { Knowledge } from './analysis';
import { mapTypes } from './mapTypes';

export interface KnowledgeOptions {
  helperDefsPath: string;
  /** a vmlinux.h to use as is */
  vmlinuxHeader?: string;
  /** where to generate vmlinux.h when none is given */
  cacheDir?: string;
  log(message: string): void;
}

export const DEFAULT_HELPER_DEFS = '/usr/include/bpf/bpf_helper_defs.h';

export function loadHelpers(file: string, log: (m: string) => void): Map<string, HelperDef> {
  try {
    return new Map(parseHelperDefs(fs.readFileSync(file, 'utf8')).map((h) => [h.name, h]));
  } catch (e) {
    log(`no BPF helper docs: cannot read ${file} (${(e as Error).message}); install libbpf-dev`);
    return new Map();
  }
}

export class MachineKnowledge implements Knowledge {
  readonly helpers: Map<string, HelperDef>;
  mapTypes = mapTypes();
  private structsCache?: KernelStructs;
  private vmlinuxText?: string;
  private generating = false;
  private btfCache?: KernelBtf | null;
  private targetsCache?: AttachTargets;

  constructor(private readonly opts: KnowledgeOptions) {
    this.helpers = loadHelpers(opts.helperDefsPath, opts.log);
    if (opts.vmlinuxHeader && fs.existsSync(opts.vmlinuxHeader)) this.useHeader(opts.vmlinuxHeader);
    else if (opts.cacheDir) void this.generate(opts.cacheDir);
  }

  private useHeader(file: string): void {
    this.vmlinuxText = fs.readFileSync(file, 'utf8');
    this.mapTypes = mapTypes(this.vmlinuxText);
    this.opts.log(`kernel types from ${file}`);
  }

  private async generate(cacheDir: string): Promise<void> {
    if (this.generating) return;
    this.generating = true;
    try {
      this.useHeader(path.join(await ensureVmlinux(cacheDir), 'vmlinux.h'));
    } catch (e) {
      this.opts.log(`no kernel struct completion: ${(e as Error).message}`);
    }
  }

  /** The running kernel's BTF (read once, ~0.2 s), or undefined when the kernel has none. */
  btf(): KernelBtf | undefined {
    if (this.btfCache === undefined) {
      const r = loadKernelBtf();
      if (r.problem) this.opts.log(`no member offsets on hover: ${r.problem}`);
      this.btfCache = r.btf ?? null;
    }
    return this.btfCache ?? undefined;
  }

  targets(): AttachTargets {
    this.targetsCache ??= loadAttachTargets(this.btf());
    return this.targetsCache;
  }

  structs(): KernelStructs | undefined {
    if (!this.structsCache && this.vmlinuxText) this.structsCache = new KernelStructs(this.vmlinuxText);
    return this.structsCache;
  }
}
