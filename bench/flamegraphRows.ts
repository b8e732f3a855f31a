// `flamegraph`: the flame-graph benchmarks (bench/flamegraph.ts, bench/flamegraphPaint.ts, the
// CPU-profiler engineer's) as rows, on the 100k-sample / 50k-frame program-like profile:
// layout in Node; first render, repaint and zoom in headless Chromium.
import fs from 'node:fs';
import path from 'node:path';
import { benchFlamegraph } from './flamegraph';
import { benchFlamegraphPaint, ZOOM_CLICKS, type PaintBench } from './flamegraphPaint';
import { median, root, round, type BenchContext, type Row } from './lib';

export async function benchFlamegraphRows(ctx: BenchContext): Promise<Row[]> {
  const model = benchFlamegraph('program-like', 100_000, 50_000, 1600, ctx.quick ? 7 : 15);
  ctx.log(`  model: ${JSON.stringify(model)}`);
  const rows: Row[] = [
    {
      name: 'flamegraph layout (100k samples, 50k frames)',
      value: model.layoutMs,
      unit: 'ms',
      target: null,
      better: 'lower',
      peer: null,
      detail: `model only, in Node: ${model.treeNodes.toLocaleString('en-US')} tree nodes, ${model.boxesDrawn.toLocaleString('en-US')} boxes at 1600 px; tree build ${model.buildTreeMs} ms (once per profile), zoomed layout ${model.layoutZoomedMs} ms`,
    },
  ];
  if (!fs.existsSync('/usr/bin/chromium') || !fs.existsSync(path.join(root, 'dist', 'webview', 'flamegraph.js'))) {
    ctx.log('  flamegraph paint rows left out: needs /usr/bin/chromium and dist/webview/flamegraph.js');
    return rows;
  }
  const runs: PaintBench[] = [];
  for (let i = 0; i < (ctx.quick ? 3 : 7); i++) runs.push(await benchFlamegraphPaint());
  ctx.log(`  paint: ${JSON.stringify(runs)}`);
  const m = (k: 'firstRenderMs' | 'firstRenderCpuMs' | 'completeMs' | 'paintMs' | 'zoomClickMs' | 'firstZoomClickMs' | 'searchMs') => round(median(runs.map((r) => r[k])), 1);
  rows.push(
    {
      name: 'flamegraph first paint (tree + layout + paint, Chromium)',
      value: m('firstRenderMs'),
      unit: 'ms',
      target: 100,
      better: 'lower',
      peer: null,
      detail: `headless Chromium, ${runs[0].canvasWidth} px canvas, median of ${runs.length} page loads; what a user waits for when the profile opens: the graph of a fair part of the stacks (every k-th, 10k of them), drawn to scale, from the message's arrival in the loaded view; main-thread CPU time of that task ${m('firstRenderCpuMs')} ms; the complete tree replaces it in later 30 ms tasks, drawn ${m('completeMs')} ms after the message`,
      limit: `building the call tree from 100k stacks takes ~${model.buildTreeMs} ms in Node; only a tenth of it is on the first paint, the rest runs after it; layout + paint alone take ${m('paintMs')} ms`,
    },
    {
      name: 'flamegraph layout+paint (repaint, Chromium)',
      value: m('paintMs'),
      unit: 'ms',
      target: 100,
      better: 'lower',
      peer: null,
      detail: 'a resize: layout and canvas paint of the whole graph, as the view reports it',
    },
    {
      name: 'flamegraph zoom frame (Chromium)',
      value: m('zoomClickMs'),
      unit: 'ms',
      target: 16,
      better: 'lower',
      peer: null,
      detail: `click on a frame → zoomed graph drawn, median of ${ZOOM_CLICKS} zooms per page load (reset in between), median over ${runs.length} page loads; the first zoom of a page (cold code): ${m('firstZoomClickMs')} ms; search for a name: ${m('searchMs')} ms`,
      limit: `one click handled synchronously: layout of the zoomed subtree (~${model.layoutZoomedMs} ms in Node) plus a full canvas repaint in software rendering (headless Chromium, --disable-gpu)`,
    },
  );
  return rows;
}
