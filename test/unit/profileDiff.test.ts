// The differential flame graph's maths on small hand-made profiles: per-call-path self-share
// changes, the movers table by function, fairness across profiles of different sizes, and the
// profile-diff CLI over real files of each format.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { diffProfiles, diffSideLabels, type ProfileDiff } from '../../extension/model/profileDiff';
import { fromFolded, toSpeedscope } from '../../extension/model/flamegraph/formats';
import { pathTo } from '../../extension/model/flamegraph/model';
import { encodePprofGz } from '../../extension/sys/profileFile';
import { profileDiffCommand } from '../../extension/cli/commands/profileDiff';
import type { ProfileResult } from '../../extension/protocol/profile';

const folded = (...lines: string[]) => fromFolded(lines.join('\n'));

/** selfDelta of the node at a call path ("main;a"), or undefined when the new profile lacks it. */
function nodeDelta(d: ProfileDiff, stack: string): { delta: number; base: number } | undefined {
  for (let n = 1; n < d.tree.size; n++) {
    const names = pathTo(d.tree, n).slice(1).map((x) => d.profile.frames[d.tree.frame[x]].name);
    if (names.join(';') === stack) return { delta: d.selfDelta[n], base: d.baseSelf[n] };
  }
  return undefined;
}

const close = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg ?? ''} ${a} ≠ ${b}`);

describe('profile diff maths', () => {
  test('self share change per call path and per function; widths from the new profile', () => {
    // base 150 samples (a 75%, b 25%), new 100 samples (a 25%, b 50%, c 25%)
    const d = diffProfiles(folded('main;a 112.5', 'main;b 37.5'), folded('main;a 25', 'main;b 50', 'main;c 25'));
    assert.equal(d.baseSamples, 150);
    assert.equal(d.newSamples, 100);
    assert.equal(d.tree.total[0], 100, 'the graph is as wide as the new profile');
    close(nodeDelta(d, 'main;a')!.delta, -50);
    close(nodeDelta(d, 'main;a')!.base, 75);
    close(nodeDelta(d, 'main;b')!.delta, 25);
    close(nodeDelta(d, 'main;c')!.delta, 25, 'a path new in this profile grew from 0');
    close(nodeDelta(d, 'main')!.delta, 0);
    close(d.maxDelta, 50);
    assert.deepEqual(
      d.movers.map((m) => m.name),
      ['a', 'b', 'c', 'main'],
    );
    const a = d.movers[0];
    close(a.baseSelf, 75);
    close(a.newSelf, 25);
    close(a.selfDelta, -50);
    close(a.totalDelta, -50);
    const main = d.movers.find((m) => m.name === 'main')!;
    close(main.totalDelta, 0);
    close(main.baseTotal, 100);
  });

  test('a function that moved between callers: per-path changes, no change by function', () => {
    const d = diffProfiles(folded('x;f 50', 'y;f 50'), folded('x;f 100'));
    close(nodeDelta(d, 'x;f')!.delta, 50);
    assert.equal(nodeDelta(d, 'y;f'), undefined, 'a path only the base has is not drawn');
    close(d.goneSelf, 50);
    const f = d.movers.find((m) => m.name === 'f')!;
    close(f.selfDelta, 0);
    close(f.totalDelta, 0);
    const y = d.movers.find((m) => m.name === 'y')!;
    close(y.totalDelta, -50);
  });

  test('recursion counts a sample once in a total; identical profiles do not move', () => {
    const p = folded('f;f;f 10', 'g 10');
    const d = diffProfiles(p, folded('f;f;f 30', 'g 30'));
    for (const m of d.movers) {
      close(m.selfDelta, 0, m.name);
      close(m.totalDelta, 0, m.name);
    }
    close(d.movers.find((m) => m.name === 'f')!.newTotal, 50);
    for (let n = 0; n < d.tree.size; n++) close(d.selfDelta[n], 0);
  });

  test('frames match by name across kinds (a Java method interpreted in one, JIT in the other)', () => {
    const d = diffProfiles(folded('main;Hot.loop_[i] 10'), folded('main;Hot.loop_[j] 10'));
    close(nodeDelta(d, 'main;Hot.loop')!.delta, 0);
    assert.equal(d.profile.frames.find((f) => f.name === 'Hot.loop')!.kind, 'jit', 'the new profile gives the kind');
  });

  test('an empty base compares as zero shares', () => {
    const d = diffProfiles({ name: 'empty', frames: [], stacks: [], total: 0 }, folded('a 1'));
    close(d.movers[0].selfDelta, 100);
  });
});

describe('profile-diff CLI', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-diff-'));
  const run = async (argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    let code: number;
    try {
      code = await profileDiffCommand.run(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
    } catch (e) {
      code = (e as { kind?: string }).kind === 'usage' || (e as { kind?: string }).kind === 'input' ? 2 : 1;
      err.push((e as Error).message);
    }
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
  const result = (aCount: number, bCount: number): ProfileResult => ({
    tracer: 'profile',
    frequency: 99,
    samples: aCount + bCount,
    lost: 0,
    stacks: [
      { count: aCount, pid: 1, tid: 1, comm: 'w', frames: [{ address: '0x10', module: '/w', function: 'hot_a', file: '/w.c', line: 3, kind: 'native' }, { address: '0x20', module: '/w', function: 'main', file: '/w.c', line: 9, kind: 'native' }] },
      { count: bCount, pid: 1, tid: 1, comm: 'w', frames: [{ address: '0x30', module: '/w', function: 'hot_b', file: '/w.c', line: 5, kind: 'native' }, { address: '0x20', module: '/w', function: 'main', file: '/w.c', line: 9, kind: 'native' }] },
    ],
  });

  test('reads pprof, folded, speedscope and our JSON and ranks the movers', async () => {
    const base = path.join(dir, 'base.pb.gz');
    fs.writeFileSync(base, encodePprofGz(result(75, 25)));
    const folder = path.join(dir, 'new.folded');
    fs.writeFileSync(folder, 'main;hot_a 20\nmain;hot_b 80\n');
    const r = await run([base, folder]);
    assert.equal(r.code, 0, r.err);
    const rows = r.out.split('\n').filter((l) => /hot_|main/.test(l) && /→/.test(l));
    assert.match(rows[0], /^\s*[−-]55\.0\s+75\.0% →\s+20\.0%.*hot_a$/);
    assert.match(rows[1], /^\s*\+55\.0\s+25\.0% →\s+80\.0%.*hot_b$/);
    const speedscope = path.join(dir, 'new.speedscope.json');
    fs.writeFileSync(speedscope, JSON.stringify(toSpeedscope(fromFolded('main;hot_a 20\nmain;hot_b 80\n'))));
    const json = path.join(dir, 'base.json');
    fs.writeFileSync(json, JSON.stringify(result(75, 25)));
    const j = await run([json, speedscope, '--json']);
    assert.equal(j.code, 0, j.err);
    const doc = JSON.parse(j.out);
    assert.equal(doc.base.samples, 100);
    assert.equal(doc.movers[0].name, 'hot_a');
    close(doc.movers[0].selfDelta, -55);
  });

  test('bad input: a reason and exit 2', async () => {
    const missing = await run([path.join(dir, 'nope.pb.gz'), path.join(dir, 'nope2')]);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /nope\.pb\.gz does not exist/);
    const one = await run([path.join(dir, 'x')]);
    assert.equal(one.code, 2);
    assert.match(one.err, /give two profiles/);
    const junk = path.join(dir, 'junk.folded');
    fs.writeFileSync(junk, 'this is not a profile\n');
    const bad = await run([junk, junk]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /junk\.folded is not a profile we can read.*folded stacks/);
    const top = await run([junk, junk, '--top', '0']);
    assert.equal(top.code, 2);
    assert.match(top.err, /--top 0 is out of range/);
  });
});

describe('diff colours', async () => {
  const { diffColor, diffScale } = await import('../../webview/flamegraph/diffColors');
  const hsl = (s: string) => s.match(/hsl\((\d+),(\d+)%,(\d+)%\)/)!.slice(1).map(Number);
  test('red grew, blue shrank, grey unchanged; stronger with the size of the change', () => {
    const scale = diffScale(10);
    assert.equal(hsl(diffColor(5, scale, false))[0], 0);
    assert.equal(hsl(diffColor(-5, scale, false))[0], 215);
    assert.equal(hsl(diffColor(0, scale, false))[1], 0);
    assert.ok(hsl(diffColor(10, scale, false))[1] > hsl(diffColor(2, scale, false))[1]);
    assert.ok(hsl(diffColor(10, scale, true))[2] < hsl(diffColor(10, scale, false))[2], 'darker on a dark theme');
    assert.equal(diffScale(0.2), 1, 'tiny differences stay pale');
  });
});

describe('the names of a diff\'s two sides', () => {
  const time = (iso: string) => iso.slice(11, 19);
  test('two sessions of one program are told apart by when each started', () => {
    assert.deepEqual(diffSideLabels({ label: 'CPU: pid 42 (sh)', startedAt: '2026-11-27T20:25:11.000Z' }, { label: 'CPU: pid 42 (sh)', startedAt: '2026-11-27T20:25:24.000Z' }, time), [
      'CPU: pid 42 (sh) 20:25:11',
      'CPU: pid 42 (sh) 20:25:24',
    ]);
  });
  test('equal names without distinct times are marked base and new; different names stay as they are', () => {
    assert.deepEqual(diffSideLabels({ label: 'cpu.pb.gz' }, { label: 'cpu.pb.gz' }, time), ['cpu.pb.gz (base)', 'cpu.pb.gz (new)']);
    assert.deepEqual(diffSideLabels({ label: 'a', startedAt: '2026-11-27T20:25:11.000Z' }, { label: 'a', startedAt: '2026-11-27T20:25:11.500Z' }, time), ['a (base)', 'a (new)']);
    assert.deepEqual(diffSideLabels({ label: 'before.folded' }, { label: 'after.folded' }, time), ['before.folded', 'after.folded']);
  });
});
