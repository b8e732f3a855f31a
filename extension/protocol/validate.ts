// Checks for untrusted option objects (JSON-RPC params, CLI flags). Each failure is an input
// error that names the field and the accepted range; nothing here touches the file system.
import { inputError } from './errors';

export type Raw = Record<string, unknown>;

export function asObject(v: unknown, what = 'params'): Raw {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw inputError(`${what} must be an object`);
  return v as Raw;
}

export function int(o: Raw, key: string, min: number, max: number, dflt?: number): number {
  const v = o[key];
  if (v === undefined || v === null) {
    if (dflt === undefined) throw inputError(`${key} is required`);
    return dflt;
  }
  if (typeof v !== 'number' || !Number.isInteger(v)) throw inputError(`${key} must be an integer, got ${JSON.stringify(v)}`);
  if (v < min || v > max) throw inputError(`${key} must be between ${min} and ${max}, got ${v}`);
  return v;
}

export function num(o: Raw, key: string, min: number, max: number, dflt?: number): number {
  const v = o[key];
  if (v === undefined || v === null) {
    if (dflt === undefined) throw inputError(`${key} is required`);
    return dflt;
  }
  if (typeof v !== 'number' || !Number.isFinite(v)) throw inputError(`${key} must be a number, got ${JSON.stringify(v)}`);
  if (v < min || v > max) throw inputError(`${key} must be between ${min} and ${max}, got ${v}`);
  return v;
}

export function bool(o: Raw, key: string, dflt: boolean): boolean {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw inputError(`${key} must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

export function str(o: Raw, key: string, maxLen = 4096, dflt?: string): string {
  const v = o[key];
  if (v === undefined || v === null) {
    if (dflt === undefined) throw inputError(`${key} is required`);
    return dflt;
  }
  if (typeof v !== 'string') throw inputError(`${key} must be a string, got ${JSON.stringify(v)}`);
  if (v.length > maxLen) throw inputError(`${key} is too long (${v.length} > ${maxLen} characters)`);
  if (v.includes('\0')) throw inputError(`${key} contains a NUL byte`);
  return v;
}

export function oneOf<T extends string>(o: Raw, key: string, allowed: readonly T[], dflt?: T): T {
  const v = o[key];
  if (v === undefined || v === null) {
    if (dflt === undefined) throw inputError(`${key} is required (one of ${allowed.join(', ')})`);
    return dflt;
  }
  if (typeof v !== 'string' || !allowed.includes(v as T)) throw inputError(`${key} must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  return v as T;
}

export function strArray(o: Raw, key: string, maxItems = 4096, dflt?: string[]): string[] {
  const v = o[key];
  if (v === undefined || v === null) {
    if (dflt === undefined) throw inputError(`${key} is required`);
    return dflt;
  }
  if (!Array.isArray(v) || v.length > maxItems || v.some((x) => typeof x !== 'string' || x.includes('\0'))) {
    throw inputError(`${key} must be an array of at most ${maxItems} strings`);
  }
  return v as string[];
}

/** Largest pid the kernel can hand out (pid_max is at most 2^22). */
export const PID_MAX = 4194304;
