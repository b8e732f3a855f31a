// The flame graph's views: left-heavy and time order, focus and exclude, the top-functions
// table, keyboard moves, the tree built in parts, and zoom kept across a rebuilt tree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTree, ROOT, TreeBuilder, type FlameTree } from '../../extension/model/flamegraph/model';
import { fromFolded } from '../../extension/model/flamegraph/formats';
import { buildTimeTree, filterStacks, framePath, leftHeavy, move, nodeAtPath, remapFrames, rowOf, sortTop, topFunctions, viewTree } from '../../extension/model/flamegraph/views';
import type { FlameProfile } from '../../extension/model/flamegraph/profileData';

// main calls a (small) and zed (big); zed calls hot; idle sits beside.
const p = fromFolded(['main;a;hot 2', 'main;zed;hot 7', 'main;zed 1', 'main;a 1', 'idle 3'].join('\n'), 't');
const id = (name: string) => p.frames.findIndex((f) => f.name === name);
const names = (t: FlameTree, prof: FlameProfile, nodes: number[]) => nodes.map((n) => (n === ROOT ? 'all' : prof.frames[t.frame[n]].name));
const kidsOf = (t: FlameTree, n: number) => Array.from(t.children.subarray(t.childStart[n], t.childStart[n + 1]));
const child = (t: FlameTree, n: number, name: string) => kidsOf(t, n).find((c) => p.frames[t.frame[c]].name === name)!;

test('by name keeps flamegraph.pl order; left-heavy puts the widest child first at every level', () => {
  const t = buildTree(p, p.stacks);
  assert.deepEqual(names(t, p, kidsOf(t, ROOT)), ['idle', 'main']);
  const main = child(t, ROOT, 'main');
  assert.deepEqual(names(t, p, kidsOf(t, main)), ['a', 'zed']);
  const lh = leftHeavy(t);
  assert.deepEqual(names(lh, p, kidsOf(lh, ROOT)), ['main', 'idle']);
  assert.deepEqual(names(lh, p, kidsOf(lh, main)), ['zed', 'a']);
  assert.deepEqual(Array.from(lh.total), Array.from(t.total), 'same nodes, same weights');
  assert.deepEqual(names(lh, p, kidsOf(lh, main)), names(lh, p, kidsOf(viewTree(p, { order: 'left-heavy', focusFrame: -1, excluded: [] }), main)));
});

test('time order merges a stack only into the last box at its depth, so boxes follow the samples', () => {
  const seq = fromFolded(['main;a 1', 'main;b 1', 'main;a 2', 'other 1', 'main;a 1'].join('\n'), 'seq');
  const t = buildTimeTree(seq.stacks);
  const top = kidsOf(t, ROOT);
  assert.deepEqual(top.map((n) => seq.frames[t.frame[n]].name), ['main', 'other', 'main']);
  assert.deepEqual(top.map((n) => t.total[n]), [4, 1, 1]);
  assert.deepEqual(kidsOf(t, top[0]).map((n) => `${seq.frames[t.frame[n]].name}=${t.total[n]}`), ['a=1', 'b=1', 'a=2']);
  assert.equal(t.total[ROOT], 6);
  // Parents precede children, as the rest of the model expects.
  for (let n = 1; n < t.size; n++) assert.ok(t.parent[n] < n);
});

test('focus roots every stack through a function at it; exclude drops the stacks through it', () => {
  const focused = filterStacks(p.stacks, { focusFrame: id('zed'), excluded: [] });
  assert.deepEqual(focused.map((s) => s.frames.map((f) => p.frames[f].name).join(';')).sort(), ['zed', 'zed;hot']);
  assert.equal(focused.reduce((s, x) => s + x.weight, 0), 8);
  const t = viewTree(p, { order: 'name', focusFrame: id('hot'), excluded: [] });
  assert.equal(t.total[ROOT], 9);
  assert.deepEqual(names(t, p, kidsOf(t, ROOT)), ['hot']);
  const without = filterStacks(p.stacks, { focusFrame: -1, excluded: [id('zed')] });
  assert.equal(without.reduce((s, x) => s + x.weight, 0), 6);
  assert.ok(without.every((s) => !s.frames.includes(id('zed'))));
  assert.equal(filterStacks(p.stacks, { focusFrame: -1, excluded: [] }), p.stacks, 'no filter, no copy');
});

test('top functions: self and total per function, sortable, recursion counted once', () => {
  const rows = topFunctions(p, p.stacks);
  assert.deepEqual(rows.slice(0, 3).map((r) => [r.name, r.self, r.total]), [['hot', 9, 9], ['idle', 3, 3], ['a', 1, 3]]);
  const byTotal = sortTop(rows, 'total', true);
  assert.deepEqual(byTotal.map((r) => r.name), ['main', 'hot', 'zed', 'a', 'idle']);
  assert.deepEqual(sortTop(rows, 'name', false).map((r) => r.name), ['a', 'hot', 'idle', 'main', 'zed']);
  assert.deepEqual(sortTop(rows, 'self', false)[0].self, 0);
  const rec = fromFolded('f;f;f 2\nf 1', 'rec');
  assert.deepEqual(topFunctions(rec, rec.stacks).map((r) => [r.name, r.self, r.total]), [['f', 3, 3]]);
  const excluded = topFunctions(p, filterStacks(p.stacks, { focusFrame: -1, excluded: [id('main')] }));
  assert.deepEqual(excluded.map((r) => r.name), ['idle']);
});

test('keyboard: parent/child/prev/next move through the drawn boxes and stop at the edges', () => {
  const t = buildTree(p, p.stacks);
  const main = child(t, ROOT, 'main');
  assert.equal(move(t, ROOT, 'child'), main, 'child goes to the widest child');
  assert.equal(move(t, main, 'child'), child(t, main, 'zed'));
  assert.equal(move(t, main, 'parent'), ROOT);
  assert.equal(move(t, ROOT, 'parent'), ROOT);
  const a = child(t, main, 'a');
  const zed = child(t, main, 'zed');
  assert.equal(move(t, a, 'next'), zed);
  assert.equal(move(t, zed, 'prev'), a);
  assert.equal(move(t, zed, 'next'), zed, 'nothing to the right');
  // prev/next cross into the neighbouring subtree at the same depth.
  const hotUnderA = child(t, a, 'hot');
  const hotUnderZed = child(t, zed, 'hot');
  assert.equal(move(t, hotUnderA, 'next'), hotUnderZed);
  assert.deepEqual(names(t, p, rowOf(t, 2)), ['a', 'zed']);
  const leaf = move(t, move(t, move(t, ROOT, 'child'), 'child'), 'child');
  assert.equal(move(t, leaf, 'child'), leaf, 'a leaf stays');
  assert.equal(move(t, 999, 'next'), ROOT, 'a stale node resets to the root');
});

test('a tree built in strided parts equals the tree built at once; a part is a fair sample', () => {
  const lines: string[] = [];
  for (let i = 0; i < 200; i++) lines.push(`main;${i % 2 ? 'odd' : 'even'};leaf${i % 7} 1`);
  const big = fromFolded(lines.join('\n'), 'big');
  const whole = buildTree(big, big.stacks);
  const b = new TreeBuilder(big);
  b.add(big.stacks, 0, big.stacks.length, 4);
  const part = b.finish();
  assert.ok(part.total[ROOT] >= big.total / 5 && part.total[ROOT] <= big.total / 3, `part weight ${part.total[ROOT]}`);
  for (let r = 1; r < 4; r++) b.add(big.stacks, r, big.stacks.length, 4);
  const done = b.finish();
  assert.equal(b.added, big.stacks.length);
  // Same tree up to node numbering: compare by frame paths.
  const canon = (t: FlameTree) => Array.from({ length: t.size }, (_, n) => `${framePath(t, n).join('/')}=${t.total[n]}:${t.self[n]}`).sort();
  assert.deepEqual(canon(done), canon(whole));
});

test('zoom kept across rebuilt profiles: frame paths survive new frame ids', () => {
  const t1 = buildTree(p, p.stacks);
  const zed = child(t1, child(t1, ROOT, 'main'), 'zed');
  const path = framePath(t1, zed);
  // The next snapshot interns frames in another order and has one more stack.
  const p2 = fromFolded(['idle 4', 'main;zed;hot 9', 'main;a;hot 2', 'main;zed 1', 'new;thing 1'].join('\n'), 't');
  const mapped = remapFrames(p, p2, path);
  const t2 = buildTree(p2, p2.stacks);
  const n2 = nodeAtPath(t2, mapped);
  assert.deepEqual(framePath(t2, n2).map((f) => p2.frames[f].name), ['main', 'zed']);
  assert.equal(t2.total[n2], 10);
  // A path whose frames are gone lands on the deepest ancestor that exists.
  const gone = remapFrames(p, fromFolded('main;b 1', 'x'), path);
  assert.deepEqual(gone.map((f) => f >= 0), [true, false]);
});
