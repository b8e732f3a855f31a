// Flag parsing shared by every CLI command: node's util.parseArgs (strict, so unknown flags are
// usage errors) plus the checks of the common contract (--pid, --duration, numbers in range).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { usageError } from '../protocol/errors';
import { PID_MAX } from '../protocol/validate';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

/**
 * parseArgs refuses "--duration -1" as ambiguous; a negative number after a value-taking flag is
 * glued on ("--duration=-1") so the range check can say what is wrong with it.
 */
function glueNegativeValues(argv: string[], options: OptionSpec): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const name = a.startsWith('--') ? a.slice(2) : undefined;
    const next = argv[i + 1];
    if (name && options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else {
      out.push(a);
    }
  }
  return out;
}

export function parse(argv: string[], options: OptionSpec, allowPositionals = false): { values: Values; positionals: string[] } {
  try {
    const r = parseArgs({ args: glueNegativeValues(argv, options), options, strict: true, allowPositionals });
    return { values: r.values as Values, positionals: r.positionals };
  } catch (e) {
    const msg = (e as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw usageError(msg);
  }
}

export function pidFlag(v: unknown, flag = '--pid'): number | undefined {
  if (v === undefined) return undefined;
  const s = String(v);
  if (!/^-?\d+$/.test(s)) throw usageError(`${flag} takes a process id (a whole number), got "${s}"`);
  const n = Number(s);
  if (n <= 0 || n > PID_MAX) throw usageError(`${flag} ${s} is out of range: a pid is from 1 to ${PID_MAX}`);
  return n;
}

export function numberFlag(v: unknown, flag: string, min: number, max: number, opts: { integer?: boolean; exclusiveMin?: boolean } = {}): number | undefined {
  if (v === undefined) return undefined;
  const s = String(v);
  const n = Number(s);
  if (s.trim() === '' || !Number.isFinite(n) || (opts.integer && !Number.isInteger(n))) {
    throw usageError(`${flag} takes ${opts.integer ? 'a whole number' : 'a number'}, got "${s}"`);
  }
  if ((opts.exclusiveMin ? n <= min : n < min) || n > max) {
    throw usageError(`${flag} ${s} is out of range: it must be ${opts.exclusiveMin ? 'greater than' : 'at least'} ${min} and at most ${max}`);
  }
  return n;
}

export function durationFlag(v: unknown): number | undefined {
  return numberFlag(v, '--duration', 0, 7 * 24 * 3600, { exclusiveMin: true });
}

/** Options every tracer command accepts. */
export const commonOptions: OptionSpec = {
  duration: { type: 'string' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};
