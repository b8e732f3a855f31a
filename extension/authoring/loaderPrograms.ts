// The programs a running loader actually loaded and attached, for the loader view: program ids
// from the BPF program fds in /proc/PID/fdinfo, attachments from its BPF link fds (link_type,
// prog_id), names and types from the kernel by id (addon progInfoById, in-process: no bpftool),
// and each program's section (its attach point) from the loader's .bpf.o next to it. The parsing
// is pure; the reads are loadedPrograms'.
import fs from 'node:fs';
import type { Addon } from '../sys/addon';
import type { ProgramState } from '../protocol/bpfRun';
import { ElfFile } from '../sys/elf/elf';
import { fdinfos } from './loaderMaps';

export interface FdBpfObjects {
  /** program ids the process holds fds of */
  programs: number[];
  /** links: prog id → link type ("perf_event", "tracing", "raw_tracepoint", "kprobe_multi"...) */
  links: Map<number, string[]>;
}

/** Program and link fds among a process's fdinfo texts. */
export function bpfFdsFromFdinfo(texts: string[]): FdBpfObjects {
  const programs = new Set<number>();
  const links = new Map<number, string[]>();
  for (const t of texts) {
    const prog = /^prog_id:\s*(\d+)/m.exec(t);
    if (!prog) continue;
    const id = Number(prog[1]);
    const link = /^link_type:\s*(\S+)/m.exec(t);
    if (link) links.set(id, [...(links.get(id) ?? []), link[1]]);
    else if (/^prog_type:/m.test(t)) programs.add(id);
  }
  return { programs: [...programs].sort((a, b) => a - b), links };
}

const SKIP_SECTIONS = /^(\.text|\.rel|\.BTF|\.maps|\.data|\.bss|\.rodata|license|version|\.llvm|\.debug|\.symtab|\.strtab|\.eh_frame|\.note)/;

/** Program functions of a BPF object and their section names (the attach points libbpf uses). */
export function objectPrograms(objectPath: string): { name: string; section: string }[] {
  const elf = new ElfFile(objectPath);
  try {
    const symtab = elf.sections.find((s) => s.type === 2);
    if (!symtab) return [];
    const strtab = elf.sectionData(elf.sections[symtab.link]);
    const data = elf.sectionData(symtab);
    const out: { name: string; section: string }[] = [];
    for (let o = 0; o + 24 <= data.length; o += 24) {
      const type = data[o + 4] & 0xf;
      const bind = data[o + 4] >> 4;
      const shndx = data.readUInt16LE(o + 6);
      if (type !== 2 || bind !== 1 || shndx === 0 || shndx >= elf.sections.length) continue; // global functions only
      const section = elf.sections[shndx].name;
      if (SKIP_SECTIONS.test(section)) continue;
      const nameOff = data.readUInt32LE(o);
      const end = strtab.indexOf(0, nameOff);
      out.push({ name: strtab.toString('utf8', nameOff, end < 0 ? strtab.length : end), section });
    }
    return out;
  } finally {
    elf.close();
  }
}

const KERNEL_NAME_LEN = 15;

/** Joins what the object declares with what the kernel says is loaded and attached. */
export function programStates(declared: { name: string; section: string }[], loaded: { id: number; name: string; type: number }[], links: Map<number, string[]>): ProgramState[] {
  const used = new Set<number>();
  const out: ProgramState[] = declared.map((d) => {
    const p = loaded.find((l) => !used.has(l.id) && l.name === d.name.slice(0, KERNEL_NAME_LEN));
    if (!p) return { name: d.name, section: d.section, attached: false, reason: 'not loaded (autoload off, or the loader has not loaded it yet)' };
    used.add(p.id);
    const l = links.get(p.id);
    return l
      ? { name: d.name, section: d.section, attached: true, detail: `prog id ${p.id}, ${l.join(' + ')} link` }
      : { name: d.name, section: d.section, attached: false, reason: `loaded as prog id ${p.id}, not attached (no link: attached by other means, or not at all)` };
  });
  // Programs the loader holds that its object does not name (created at run time).
  for (const p of loaded) {
    if (used.has(p.id)) continue;
    const l = links.get(p.id);
    out.push({ name: p.name, section: '(not in the object)', attached: !!l, ...(l ? { detail: `prog id ${p.id}, ${l.join(' + ')} link` } : { reason: `prog id ${p.id}, no link` }) });
  }
  return out;
}

/** The loader's programs: declared by `objectPath` (when it exists) and as the kernel has them. */
export function loadedPrograms(addon: Pick<Addon, 'progInfoById'>, pid: number, objectPath?: string): ProgramState[] {
  const fds = bpfFdsFromFdinfo(fdinfos(pid));
  const ids = new Set([...fds.programs, ...fds.links.keys()]);
  const loaded: { id: number; name: string; type: number }[] = [];
  for (const id of ids) {
    try {
      loaded.push(addon.progInfoById(id));
    } catch {
      /* unloaded since the fdinfo was read */
    }
  }
  let declared: { name: string; section: string }[] = [];
  // Regular files only: a FIFO or a device in the object's place would block or feed the reader forever.
  const regular = (() => {
    try {
      const st = objectPath ? fs.statSync(objectPath) : undefined;
      return !!st && st.isFile() && st.size < 256 << 20;
    } catch {
      return false;
    }
  })();
  if (objectPath && regular) {
    try {
      declared = objectPrograms(objectPath);
    } catch {
      /* not an ELF we can read: the kernel's view alone */
    }
  }
  return programStates(declared, loaded, fds.links);
}
