// Loads a BPF object without attaching it and turns the verifier's verdict into diagnostics.
// Runs where the kernel may be touched: the helper (for the editor) and the CLI (as root).
import fs from 'node:fs';
import path from 'node:path';
import { readSourceOnce } from '../sys/userObject';
import type { Addon } from '../sys/addon';
import { fromBpfError, StudioError } from '../protocol/errors';
import type { VerifyResponse } from '../protocol/authoring';
import { hasVerifierLog, verifierDiagnostics, verifierStats, type SourceFile } from './verifierLog';
import { unresolvedExternDiagnostics, unresolvedExterns } from './unresolvedFunctions';
import { checkBpfObject } from './toolchain';

function errText(e: unknown): { code?: string; message: string; log: string } {
  const x = e as { code?: string; message?: string; log?: string };
  return { code: x?.code, message: x?.message ?? String(e), log: x?.log ?? '' };
}

/** Sources next to the object, so "@ prog.bpf.c:12" can become a full path and a column. */
export function siblingSources(objectPath: string, extra: string[] = []): SourceFile[] {
  const dir = path.dirname(objectPath);
  const candidates = new Set(extra);
  try {
    for (const f of fs.readdirSync(dir)) if (/\.(c|h)$/.test(f)) candidates.add(path.join(dir, f));
  } catch {
    /* unreadable dir: basenames stay */
  }
  const out: SourceFile[] = [];
  for (const p of candidates) {
    // Regular files under 4 MiB only, read through one fd: /dev/zero reads forever, a FIFO blocks.
    const text = readSourceOnce(p);
    if (text) out.push({ path: p, text });
  }
  return out;
}

export function verifyObject(addon: Addon, objectPath: string, sources: SourceFile[] = []): VerifyResponse {
  checkBpfObject(objectPath);
  let obj: InstanceType<Addon['BpfObject']>;
  try {
    obj = new addon.BpfObject(objectPath);
  } catch (e) {
    const t = errText(e);
    // libbpf reports a call to a function nothing declares (a helper typo) as ENOENT from open.
    if (unresolvedExterns(t.log + t.message).length) return { ok: false, diagnostics: unresolvedExternDiagnostics(t.log + '\n' + t.message, sources, objectPath), log: t.log };
    throw new StudioError('input', `libbpf cannot open ${objectPath}: ${t.message}. Was it built with clang -target bpf -g?`, t.log);
  }
  if (obj.programs().length === 0) {
    obj.close();
    throw new StudioError('input', `${objectPath} holds no BPF programs: add a function with SEC("...")`);
  }
  try {
    // Level 1 | BPF_LOG_STATS (4): the log ends with the instruction count and verification time.
    const r = obj.load({ logLevel: 5 });
    return { ok: true, diagnostics: [], log: r.log, stats: verifierStats(r.log) };
  } catch (e) {
    // The addon puts each program's verifier log (from our log buffer) into the error's log.
    const t = errText(e);
    obj.close();
    if (unresolvedExterns(t.log + t.message).length) return { ok: false, diagnostics: unresolvedExternDiagnostics(t.log + '\n' + t.message, sources, objectPath), log: t.log };
    if (t.code === 'EPERM' || (t.code === 'EACCES' && !hasVerifierLog(t.log) && !/BPF program load failed/.test(t.log))) throw fromBpfError(`loading ${objectPath}`, e);
    const diagnostics = verifierDiagnostics(t.log, sources);
    if (diagnostics.length === 0) {
      diagnostics.push({ file: sources[0]?.path ?? objectPath, line: 1, column: 1, severity: 'error', message: t.message, excerpt: t.log.trim().split('\n').slice(-8).join('\n') });
    }
    return { ok: false, diagnostics, log: t.log };
  } finally {
    obj.close();
  }
}
