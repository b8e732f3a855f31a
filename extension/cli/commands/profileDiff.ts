// `ebpf-studio profile-diff BASE NEW [--json] [--top N]`: compares two CPU profiles (folded
// stacks, speedscope, pprof .pb.gz or `profile --json`, told apart by content) and prints the
// functions whose share of CPU moved most: self and total share in each, and the change in
// percentage points. No privilege needed: it only reads files.
import fs from 'node:fs';
import type { Command } from '../command';
import { numberFlag, parse } from '../args';
import { inputError, usageError } from '../../protocol/errors';
import { readProfilePath } from '../../sys/profileReader';
import { LimitError } from '../../model/readLimits';
import { diffProfiles, formatMovers } from '../../model/profileDiff';
import type { FlameProfile } from '../../model/flamegraph/profileData';

const USAGE = `ebpf-studio profile-diff BASE NEW [--json] [--top N]
  BASE, NEW   CPU profiles: folded stacks, speedscope JSON, pprof (.pb.gz) or profile --json output
  --json      print the comparison as JSON (every function, not just the top N)
  --top N     rows of the text table (default 20)
Shares are in percent of each profile's own samples; changes are in percentage points.`;

/** A profile file, read within PROFILE_LIMITS in a worker (a hostile file fails with the limit it passed). */
export async function readProfileFile(file: string): Promise<FlameProfile> {
  if (!fs.existsSync(file)) throw inputError(`${file} does not exist`);
  if (!fs.statSync(file).isFile()) throw inputError(`${file} is not a regular file`);
  try {
    return (await readProfilePath(file)).flame;
  } catch (e) {
    if (e instanceof LimitError) throw inputError(`${file} cannot be read: ${e.message}`);
    throw inputError(`${file} is not a profile we can read (folded stacks, speedscope, pprof or profile --json): ${(e as Error).message}`);
  }
}

export const profileDiffCommand: Command = {
  name: 'profile-diff',
  summary: 'compare two CPU profiles: the functions whose CPU share grew or shrank most',
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parse(argv, { json: { type: 'boolean' }, top: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, true);
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    if (positionals.length !== 2) throw usageError(`give two profiles, the base then the new one (got ${positionals.length})`);
    const top = numberFlag(values.top, '--top', 1, 100000, { integer: true }) ?? 20;
    const [a, b] = positionals;
    const base = await readProfileFile(a);
    const next = await readProfileFile(b);
    const d = diffProfiles(base, next);
    if (values.json) {
      io.out(
        JSON.stringify(
          {
            base: { file: a, samples: d.baseSamples },
            new: { file: b, samples: d.newSamples },
            unit: 'percent of each profile; deltas in percentage points',
            movers: d.movers,
          },
          null,
          2,
        ),
      );
    } else io.out(formatMovers(d, a, b, top));
    return 0;
  },
};
