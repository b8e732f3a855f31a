// Reads a BPF object's BTF through bpftool's JSON dump (see btfDecode.ts for why bpftool).
import { spawnSync } from 'node:child_process';
import { Btf } from './btfDecode';
import { findTool } from './toolchain';

/** The object's BTF, or a reason why there is none (no bpftool, built without -g). */
export function readObjectBtf(objectPath: string): { btf?: Btf; problem?: string } {
  const bpftool = findTool('bpftool');
  if (!bpftool) return { problem: 'bpftool is not installed, so map contents are shown as hex (apt-get install bpftool)' };
  const r = spawnSync(bpftool, ['-j', 'btf', 'dump', 'file', objectPath], { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 20000 });
  if (r.status !== 0) return { problem: `no BTF in ${objectPath} (build with -g): ${(r.stderr || '').trim()}` };
  try {
    return { btf: Btf.fromBpftoolJson(JSON.parse(r.stdout)) };
  } catch (e) {
    return { problem: `cannot read bpftool's BTF dump: ${(e as Error).message}` };
  }
}
