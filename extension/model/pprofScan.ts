// A linear pass over a profile.proto message before it is decoded: checks that every varint,
// tag and length is well formed and counts what decoding would build (samples, locations, their
// lines, labels, ids, strings), so a small file that would decode into millions of objects is
// refused by name (see readLimits.ts) before any of them exists. It reads two levels deep, which
// is all profile.proto has that repeats. Pure: no node modules.
import { ImportError, type ReadBudget } from './readLimits';

/** A file that is not a pprof profile we can read. */
export class PprofError extends ImportError {}

/** profile.proto's top-level fields whose entries are messages with repeated parts. */
const SAMPLE = 2;
const LOCATION = 4;
const NESTED = new Set([1, SAMPLE, 3, LOCATION, 5, 11]);
/** Sample fields packed as varints: location_id, value. */
const PACKED_IN_SAMPLE = new Set([1, 2]);
/** Location's line field. */
const LINE = 4;

class Reader {
  constructor(
    readonly b: Uint8Array,
    public at: number,
    readonly end: number,
  ) {}

  bad(what: string): never {
    throw new PprofError(`not a pprof profile (profile.proto): ${what} at byte ${this.at}`);
  }

  varint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.end) this.bad('a varint runs past the end of its message');
      const c = this.b[this.at++];
      v += (c & 0x7f) * scale;
      scale *= 128;
      if (c < 0x80) return v;
    }
    return this.bad('a varint longer than 10 bytes');
  }

  /** Skips a field's value; returns [start, end) of a length-delimited one. */
  skip(wire: number): [number, number] | undefined {
    if (wire === 0) this.varint();
    else if (wire === 1) this.advance(8);
    else if (wire === 5) this.advance(4);
    else if (wire === 2) {
      const len = this.varint();
      const start = this.at;
      this.advance(len);
      return [start, this.at];
    } else this.bad(`wire type ${wire} (groups are not used by profile.proto)`);
    return undefined;
  }

  advance(n: number): void {
    if (n > this.end - this.at) this.bad('a field runs past the end of its message');
    this.at += n;
  }

  /** Calls `each` with every field of this message: its number, wire type and, if length-delimited, its range. */
  fields(each: (field: number, wire: number, start: number, end: number) => void): void {
    while (this.at < this.end) {
      const tag = this.varint();
      const field = Math.floor(tag / 8);
      if (field === 0) this.bad('field number 0');
      const wire = tag % 8;
      const range = this.skip(wire);
      each(field, wire, range ? range[0] : -1, range ? range[1] : -1);
    }
  }
}

function countVarints(b: Uint8Array, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) if (b[i] < 0x80) n++;
  if (end > start && b[end - 1] >= 0x80) throw new PprofError('not a pprof profile (profile.proto): a packed varint runs past the end of its field');
  return n;
}

/** Throws an ImportError (or LimitError) when these bytes are malformed protobuf or decode past a limit. */
export function scanPprof(b: Uint8Array, budget: ReadBudget): void {
  let records = 0;
  let samples = 0;
  const count = (n: number) => {
    records += n;
    if (records > budget.limits.maxProtobufRecords) budget.fail('maxProtobufRecords', 'the records of the protobuf message');
    budget.work(n);
  };
  new Reader(b, 0, b.length).fields((field, _wire, start, end) => {
    count(1);
    if (start < 0 || !NESTED.has(field)) return;
    if (field === SAMPLE && ++samples > budget.limits.maxSamples) budget.fail('maxSamples', 'the number of samples');
    let lines = 0;
    new Reader(b, start, end).fields((inner, innerWire, innerStart, innerEnd) => {
      if (field === SAMPLE && innerWire === 2 && PACKED_IN_SAMPLE.has(inner)) count(countVarints(b, innerStart, innerEnd));
      else count(1);
      if (field === LOCATION && inner === LINE && ++lines > budget.limits.maxLinesPerLocation) budget.fail('maxLinesPerLocation', 'the lines (inlined functions) of one location');
    });
  });
}
