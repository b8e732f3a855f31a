// Helpers every tracer uses around the addon: open a built object by name, set typed rodata,
// load with a tp_btf → raw_tp fallback, and turn libbpf failures into StudioErrors.
import fs from 'node:fs';
import path from 'node:path';
import type { BpfObject } from '../../native/index';
import { fromBpfError, StudioError } from '../protocol/errors';
import type { TracerEnv } from './tracer';

export type RodataValue = number | bigint | boolean;

export function objectPath(env: TracerEnv, name: string): string {
  return path.join(env.assetDir, 'bpf', `${name}.bpf.o`);
}

export function openObject(env: TracerEnv, name: string): BpfObject {
  const file = objectPath(env, name);
  if (!fs.existsSync(file)) throw new StudioError('internal', `${file} is missing: run "npm run build"`);
  try {
    return new env.addon.BpfObject(file);
  } catch (e) {
    throw fromBpfError(`opening ${file}`, e);
  }
}

/** Encodes each value little-endian in the variable's own size (1, 2, 4 or 8 bytes). */
export function setRodata(obj: BpfObject, values: Record<string, RodataValue>): void {
  const vars = new Map(obj.variables('.rodata').map((v) => [v.name, v]));
  for (const [name, value] of Object.entries(values)) {
    const v = vars.get(name);
    if (!v) throw new StudioError('internal', `${obj.path} has no const volatile variable "${name}"`);
    const buf = Buffer.alloc(v.size);
    const n = typeof value === 'boolean' ? (value ? 1n : 0n) : BigInt(value);
    if (v.size === 1) buf.writeUInt8(Number(n & 0xffn));
    else if (v.size === 2) buf.writeUInt16LE(Number(n & 0xffffn));
    else if (v.size === 4) buf.writeUInt32LE(Number(BigInt.asUintN(32, n)));
    else if (v.size === 8) buf.writeBigUInt64LE(BigInt.asUintN(64, n));
    else throw new StudioError('internal', `rodata variable ${name} has unsupported size ${v.size}`);
    obj.setRodata(name, buf);
  }
}

/** Turns on exactly the named programs. */
export function onlyPrograms(obj: BpfObject, names: string[]): void {
  const want = new Set(names);
  for (const p of obj.programs()) obj.setAutoload(p.name, want.has(p.name));
}

/**
 * Opens, configures and loads the object with the first program set that the kernel accepts,
 * e.g. [['handle_switch_btf', ...], ['handle_switch_raw', ...]] for tp_btf with a raw_tp
 * fallback. Returns the loaded object and the index of the variant that loaded.
 */
export function loadFirstWorking(env: TracerEnv, name: string, variants: string[][], configure: (obj: BpfObject, variant: number) => void): { obj: BpfObject; variant: number } {
  let lastErr: unknown;
  for (let i = 0; i < variants.length; i++) {
    const obj = openObject(env, name);
    try {
      onlyPrograms(obj, variants[i]);
      configure(obj, i);
      obj.load();
      return { obj, variant: i };
    } catch (e) {
      obj.close();
      lastErr = e;
      const code = (e as { code?: string }).code;
      if (code === 'EPERM' || code === 'EACCES') break;
      env.log(`${name}: variant ${variants[i].join(',')} did not load: ${(e as Error).message}`);
    }
  }
  throw fromBpfError(`loading ${name}.bpf.o`, lastErr);
}

/** Sum of the u64 slots of a map value: one per possible CPU for a per-CPU map, the value itself otherwise. */
export function sumU64(buf: Buffer | null): number {
  if (!buf) return 0;
  let n = 0n;
  for (let o = 0; o + 8 <= buf.length; o += 8) n += buf.readBigUInt64LE(o);
  return Number(n);
}

/**
 * One u64 counter of an ARRAY or PERCPU_ARRAY map keyed by a u32 index (the loss and statistics
 * counters every tracer keeps): per-CPU slots summed; 0 when the slot cannot be read.
 */
export function readCounter(obj: BpfObject, map: string, index: number): number {
  const key = Buffer.alloc(4);
  key.writeUInt32LE(index >>> 0);
  return sumU64(obj.mapLookup(map, key));
}

export function cString(buf: Buffer, offset: number, len: number): string {
  const slice = buf.subarray(offset, offset + len);
  const end = slice.indexOf(0);
  return slice.toString('utf8', 0, end < 0 ? len : end);
}

/** Splits an addon ring-buffer batch into records. */
export function* records(batch: Buffer, offsets: Uint32Array): Generator<Buffer> {
  for (let i = 0; i + 1 < offsets.length; i++) yield batch.subarray(offsets[i], offsets[i + 1]);
}
