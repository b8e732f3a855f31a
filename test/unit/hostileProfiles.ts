// Hostile profile files, generated (never committed as binaries): each one made a reader run out
// of memory or spin for minutes before the readers were bounded. Used by readerLimits.test.ts and
// its child process (readerLimitsChild.ts), which reads one file and reports time and memory.
import { gzipSync } from 'node:zlib';
import { Function as PFunction, Line, Location, Profile, Sample, StringTable, ValueType } from 'pprof-format';

export interface HostileFile {
  name: string;
  /** what it attacks, for the test's title */
  what: string;
  bytes: Buffer;
  /** the limit (its name in PROFILE_LIMITS) the error must name, or a regexp of the message */
  expect: RegExp;
}

/** One location holding `lines` inlined lines, referenced `refs` times by one sample: refs × lines frames. */
export function pprofLineBomb(lines = 1000, refs = 1000): Buffer {
  const st = new StringTable();
  const fn = new PFunction({ id: 1, name: st.dedup('f'), systemName: st.dedup('f') });
  const loc = new Location({ id: 1, mappingId: 0, address: 0x1000, line: Array.from({ length: lines }, () => new Line({ functionId: 1, line: 0 })) });
  const sample = new Sample({ locationId: Array.from({ length: refs }, () => 1), value: [1] });
  const p = new Profile({ sampleType: [new ValueType({ type: st.dedup('samples'), unit: st.dedup('count') })], sample: [sample], location: [loc], function: [fn], stringTable: st });
  return Buffer.from(p.encode());
}

/** A speedscope "evented" profile that opens `depth` frames one time unit apart, then closes them. */
export function speedscopeEventedRamp(depth = 26_000): Buffer {
  const ev: string[] = [];
  for (let i = 0; i < depth; i++) ev.push(`{"type":"O","at":${i},"frame":0}`);
  for (let i = depth - 1; i >= 0; i--) ev.push(`{"type":"C","at":${2 * depth - i},"frame":0}`);
  return Buffer.from(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"f"}]},"profiles":[{"type":"evented","name":"x","unit":"none","startValue":0,"endValue":${2 * depth + 1},"events":[${ev.join(',')}]}]}`);
}

/** `members` concatenated gzip members of 1 MiB of zeros each (gunzip reads them all as one stream). */
export function gzipBombMembers(members = 4096): Buffer {
  const one = gzipSync(Buffer.alloc(1 << 20), { level: 9 });
  return Buffer.concat(Array.from({ length: members }, () => one));
}

/** One gzip member whose text is `mib` MiB of a folded line's frames ("a;a;a;..."): a bomb that is also text. */
export function gzipBombText(mib = 300): Buffer {
  return gzipSync(Buffer.alloc(mib << 20, 'a;'), { level: 9 });
}

/** A .cpuprofile whose nodes form one chain `depth` deep, every node sampled: depth² frames if each stack is copied. */
export function cpuprofileChain(depth = 50_000): Buffer {
  const nodes: string[] = [];
  for (let i = 1; i <= depth; i++) nodes.push(`{"id":${i},"callFrame":{"functionName":"f${i % 7}"},"children":[${i < depth ? i + 1 : ''}]}`);
  const samples = Array.from({ length: depth }, (_, i) => i + 1);
  return Buffer.from(`{"nodes":[${nodes.join(',')}],"startTime":0,"endTime":1,"samples":[${samples.join(',')}]}`);
}

/** JSON nested `depth` arrays deep. */
export function jsonDeep(depth = 5_000_000): Buffer {
  return Buffer.from(`{"shared":${'['.repeat(depth)}${']'.repeat(depth)}}`);
}

/** Folded stacks with `lines` distinct one-frame lines: millions of distinct frames. */
export function foldedManyFrames(lines = 1_000_000): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < lines; i++) parts.push(`f${i} 1\n`);
  return gzipSync(Buffer.from(parts.join('')), { level: 1 });
}

/** A protobuf whose samples are `n` empty sample messages: tiny bytes, millions of decoded objects. */
export function pprofManySamples(n = 10_000_000): Buffer {
  const head = pprofLineBomb(1, 1);
  // field 2 (sample), length 0: two bytes per sample
  return gzipSync(Buffer.concat([head, Buffer.alloc(2 * n, Buffer.from([0x12, 0x00]))]), { level: 9 });
}

/** Folded text: `lines` lines of `depth` frames each ("a;a;...;a 1"). */
export function foldedLines(lines: number, depth: number, compress = true): Buffer {
  const line = `${Array.from({ length: depth }, () => 'a').join(';')} 1\n`;
  const text = Buffer.from(line.repeat(lines));
  return compress ? gzipSync(text, { level: 1 }) : text;
}

/** A varint that never ends (ten and more continuation bytes) after a valid header. */
export function pprofBadVarint(): Buffer {
  return Buffer.concat([pprofLineBomb(1, 1), Buffer.from([0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])]);
}

export function hostileFiles(): HostileFile[] {
  return [
    { name: 'lines.pb', what: 'pprof: one location of 1,000 lines referenced 1,000 times', bytes: pprofLineBomb(), expect: /maxStackDepth|maxLinesPerLocation/ },
    { name: 'ramp.speedscope.json', what: 'speedscope evented: 26,000 nested opens (O(N²) copies)', bytes: speedscopeEventedRamp(), expect: /maxTotalFrames|maxStackDepth/ },
    { name: 'members.pb.gz', what: 'gzip bomb: 4,096 members of 1 MiB zeros (4 GiB)', bytes: gzipBombMembers(), expect: /maxDecompressedBytes/ },
    { name: 'text.folded.gz', what: 'gzip bomb: 300 MiB of folded text in one member', bytes: gzipBombText(), expect: /maxDecompressedBytes/ },
    { name: 'chain.cpuprofile', what: '.cpuprofile: a 50,000-deep chain, every node sampled', bytes: cpuprofileChain(), expect: /maxTotalFrames|maxStackDepth/ },
    { name: 'deep.speedscope.json', what: 'JSON nested 5,000,000 deep', bytes: jsonDeep(), expect: /maxJsonDepth/ },
    { name: 'frames.folded.gz', what: 'folded: 1,000,000 distinct frames', bytes: foldedManyFrames(), expect: /maxDistinctFrames/ },
    { name: 'samples.pb.gz', what: 'pprof: 10,000,000 empty samples (20 MB, 20 KB gzipped)', bytes: pprofManySamples(), expect: /maxSamples/ },
    { name: 'deep.pb', what: 'pprof: one location of 200 lines referenced 1,000 times (200,000 frames)', bytes: pprofLineBomb(200, 1000), expect: /maxStackDepth/ },
    { name: 'line.folded.gz', what: 'folded: one line of 10,000,000 frames', bytes: foldedLines(1, 10_000_000), expect: /maxStackDepth/ },
    { name: 'total.folded.gz', what: 'folded: 10,000 lines of 1,100 frames (11,000,000 frames)', bytes: foldedLines(10_000, 1_100), expect: /maxTotalFrames/ },
    { name: 'count.folded.gz', what: 'folded: 2,000,000 one-frame lines', bytes: foldedLines(2_000_000, 1), expect: /maxSamples/ },
    { name: 'varint.pb', what: 'pprof: a varint that never ends', bytes: pprofBadVarint(), expect: /varint|protobuf|profile\.proto/ },
  ];
}
