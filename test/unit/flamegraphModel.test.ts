// The flame-graph model: tree building, layout (widths, depth order, pixel culling, zoom),
// hit testing, search with matched share, sandwich, per-function totals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTree, frameTotals, hitTest, layout, pathTo, ROOT, sandwich, search } from '../../extension/model/flamegraph/model';
import { fromFolded } from '../../extension/model/flamegraph/formats';

const folded = ['main;a;b 30', 'main;a;c 10', 'main;d 50', 'main 10', 'other;a;b 0'].join('\n');

function setup() {
  const p = fromFolded(folded);
  const tree = buildTree(p, p.stacks);
  const nodeOf = (path: string) => {
    let n = ROOT;
    for (const name of path.split(';')) {
      let found = -1;
      for (let c = tree.childStart[n]; c < tree.childStart[n + 1]; c++) if (p.frames[tree.frame[tree.children[c]]].name === name) found = tree.children[c];
      assert.ok(found >= 0, `no node ${path}`);
      n = found;
    }
    return n;
  };
  return { p, tree, nodeOf };
}

test('tree totals and self counts follow the stacks', () => {
  const { tree, nodeOf } = setup();
  assert.equal(tree.total[ROOT], 100);
  assert.equal(tree.total[nodeOf('main')], 100);
  assert.equal(tree.self[nodeOf('main')], 10);
  assert.equal(tree.total[nodeOf('main;a')], 40);
  assert.equal(tree.self[nodeOf('main;a;b')], 30);
  assert.equal(tree.maxDepth, 3);
  for (let n = 1; n < tree.size; n++) assert.ok(tree.parent[n] < n, 'parents precede children');
});

test('layout: child widths plus self width equal the parent width; rows in depth order, left to right', () => {
  const { tree } = setup();
  const l = layout(tree, 1000);
  for (let i = 0; i < l.count; i++) {
    const n = l.node[i];
    let sum = (tree.self[n] / tree.total[n]) * l.w[i];
    for (let j = 0; j < l.count; j++) if (tree.parent[l.node[j]] === n) sum += l.w[j];
    assert.ok(Math.abs(sum - l.w[i]) < 1e-9, `widths under node ${n} sum to ${sum}, not ${l.w[i]}`);
  }
  for (let i = 1; i < l.count; i++) {
    assert.ok(l.depth[i] >= l.depth[i - 1], 'depth never decreases');
    if (l.depth[i] === l.depth[i - 1]) assert.ok(l.x[i] >= l.x[i - 1] + l.w[i - 1] - 1e-9, 'boxes in a row do not overlap and go left to right');
  }
  for (let r = 0; r + 1 < l.rowStart.length; r++) for (let i = l.rowStart[r]; i < l.rowStart[r + 1]; i++) assert.equal(l.depth[i], l.depth[l.rowStart[r]]);
  assert.equal(l.w[0], 1000);
});

test('layout skips boxes narrower than the minimum with their subtrees', () => {
  const p = fromFolded(['main;big 999', 'main;tiny;deeper 1'].join('\n'));
  const tree = buildTree(p, p.stacks);
  const names = (l: ReturnType<typeof layout>) => Array.from(l.node.subarray(0, l.count), (n) => (n === ROOT ? 'all' : p.frames[tree.frame[n]].name));
  assert.deepEqual(names(layout(tree, 500)), ['all', 'main', 'big']);
  assert.deepEqual(names(layout(tree, 5000)), ['all', 'main', 'big', 'tiny', 'deeper']);
});

test('zoom: the focus and its ancestors take the full width, siblings disappear', () => {
  const { tree, nodeOf, p } = setup();
  const a = nodeOf('main;a');
  const l = layout(tree, 800, a);
  const byName = new Map(Array.from(l.node.subarray(0, l.count), (n, i) => [n === ROOT ? 'all' : p.frames[tree.frame[n]].name, i]));
  assert.deepEqual([...byName.keys()], ['all', 'main', 'a', 'b', 'c']);
  assert.equal(l.w[byName.get('a')!], 800);
  assert.equal(l.w[byName.get('b')!], 600);
  assert.equal(l.w[byName.get('c')!], 200);
  assert.deepEqual(pathTo(tree, nodeOf('main;a;b')), [ROOT, nodeOf('main'), a, nodeOf('main;a;b')]);
});

test('hit test finds the box under a point', () => {
  const { tree, nodeOf } = setup();
  const l = layout(tree, 100);
  // Row depth 2 under main: a (40 wide, at 0) then d (50 wide, at 40).
  assert.equal(l.node[hitTest(l, 2, 10)], nodeOf('main;a'));
  assert.equal(l.node[hitTest(l, 2, 45)], nodeOf('main;d'));
  assert.equal(hitTest(l, 2, 95), -1, 'self area of main is empty');
  assert.equal(hitTest(l, 9, 10), -1);
});

test('search: matches by substring or /regex/, counts each sample once', () => {
  const { tree, p } = setup();
  const r = search(tree, p, '/^A$/');
  assert.equal(r.matched, 40);
  assert.equal(r.percent, 40);
  assert.equal(search(tree, p, 'B').matched, 30, 'case-insensitive substring');
  assert.equal(search(tree, p, 'a').matched, 100, '"main" contains "a" too');
  assert.equal(search(tree, p, '/^(b|d)$/').matched, 80);
  assert.equal(search(tree, p, 'main').matched, 100, 'main and its descendants are one match');
  assert.equal(search(tree, p, 'zzz').matched, 0);
  assert.equal(search(tree, p, '').matched, 0);
});

test('search within a zoomed node reports the share of that node', () => {
  const { tree, p, nodeOf } = setup();
  const r = search(tree, p, 'c', nodeOf('main;a'));
  assert.equal(r.matched, 10);
  assert.equal(r.percent, 25);
  assert.equal(search(tree, p, 'main', nodeOf('main;a')).percent, 100, 'an ancestor match covers the whole zoomed node');
});

test('sandwich: callers above, callees below, recursion counted once', () => {
  const p = fromFolded(['main;x;f;g 5', 'main;y;f 3', 'main;f;f;h 2', 'main;z 7'].join('\n'));
  const f = p.frames.findIndex((fr) => fr.name === 'f');
  const s = sandwich(p, f);
  assert.equal(s.total, 10);
  assert.equal(s.self, 3);
  const name = (t: typeof s.callers, n: number) => p.frames[t.frame[n]].name;
  const kids = (t: typeof s.callers, n: number) => Array.from(t.children.subarray(t.childStart[n], t.childStart[n + 1]), (c) => `${name(t, c)}:${t.total[c]}`);
  assert.deepEqual(kids(s.callers, ROOT), ['f:10']);
  const fC = s.callers.children[0];
  assert.deepEqual(kids(s.callers, fC), ['main:2', 'x:5', 'y:3']);
  const fE = s.callees.children[0];
  assert.deepEqual(kids(s.callees, ROOT), ['f:10']);
  assert.deepEqual(kids(s.callees, fE), ['f:2', 'g:5']);
  assert.equal(s.callees.self[fE], 3);
});

test('frame totals: self is leaf samples, total counts a recursive frame once per sample', () => {
  const p = fromFolded(['main;f;f 4', 'main;g 6'].join('\n'));
  const { self, total } = frameTotals(p);
  const id = (n: string) => p.frames.findIndex((f) => f.name === n);
  assert.equal(self[id('f')], 4);
  assert.equal(total[id('f')], 4);
  assert.equal(total[id('main')], 10);
  assert.equal(self[id('main')], 0);
});
