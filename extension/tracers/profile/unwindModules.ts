// Which modules of a process are unwound by CFI and which only by frame pointers: what the
// profile view and `doctor --pid` show. The CFI answer comes from libdw itself (the
// unwinder that does the work); the frame-pointer share from the prologue check.
import type { UnwindModule } from '../../../native/index';
import type { UnwindModuleInfo } from '../../protocol/profile';
import { checkBinary } from '../../sys/elf/binaryChecks';

export function unwindModules(mods: UnwindModule[]): UnwindModuleInfo[] {
  const out: UnwindModuleInfo[] = [];
  for (const m of mods) {
    const info: UnwindModuleInfo = { module: m.name, cfi: m.cfi };
    if (m.name.startsWith('/')) {
      try {
        const share = checkBinary(m.name).framePointerShare;
        if (share !== undefined) info.framePointers = Math.round(share * 100) / 100;
      } catch {
        /* unreadable (deleted, other namespace): the CFI answer stands alone */
      }
    }
    out.push(info);
  }
  return out.sort((a, b) => a.module.localeCompare(b.module));
}

/** One line per module, for doctor and the CLI's verbose output. */
export function describeUnwind(m: UnwindModuleInfo): string {
  const how = m.cfi === 'none' ? 'frame pointers only (no CFI)' : `CFI from ${m.cfi === 'eh_frame' ? '.eh_frame' : '.debug_frame'}`;
  const fp = m.framePointers === undefined ? '' : `; frame pointers in ${Math.round(m.framePointers * 100)}% of functions`;
  return `${m.module}: ${how}${fp}`;
}
