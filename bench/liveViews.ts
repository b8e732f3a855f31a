// `live-views`: the live webviews after an hour of data, in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core), as the flame-graph rows are measured. Each bundled
// view (dist/webview/<view>.js) is loaded into a page whose VS Code API is a small stand-in that
// records what the view posts and answers Stop with `ended`, as the extension does. The view is
// fed an hour of updates at the tracer's own cadence (generated in the page, as messages), then
// keeps receiving live updates; measured are
//   - redraw: for each live update, from the start of the animation frame that draws it to the
//     end of that frame's work (the view's render, then style, layout and paint; median, worst),
//   - page memory: the JS heap after a forced garbage collection (Chrome DevTools Protocol),
//   - Stop: from the click's input event to the view showing "Stopped" (the stand-in host
//     answers at once, so this is the page's own latency while updates keep arriving).
// Standalone: node --import tsx bench/liveViews.ts [--quick] [javaGc runqlat jvmTimeline]; with
// LIVE_VIEWS_PROFILE=DIR the live updates run under Chromium's CPU profiler (through the DevTools
// Protocol) and DIR/<view>.cpuprofile is written (open it in Chrome DevTools' Performance panel),
// with the functions taking the most self time printed to stderr.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { median, root, round, type BenchContext, type Row } from './lib';

export interface LiveViewBench {
  view: string;
  /** what an hour of data was */
  fed: string;
  /** wall time to take the hour in (every update handled, one frame drawn per 30 s of data) */
  ingestMs: number;
  redrawMedianMs: number;
  redrawMaxMs: number;
  /** live updates measured */
  frames: number;
  heapMb: number;
  stopMs: number;
}

type Feeder = 'javaGc' | 'runqlat' | 'jvmTimeline';

/** In-page generators of one update (tick i of the hour), as the tracers send them. */
const GENERATORS = `
window.benchUpdate = {
  javaGc(i) {
    // 50 GCs/s in 500 ms ticks: 25 per update; a full GC once a minute; G1's four pools.
    const startNs = 1e12, per = 25, events = [];
    for (let k = 0; k < per; k++) {
      const n = i * per + k;
      const t = startNs + n * 2e7;
      const full = n % 3000 === 0;
      const eden = 50e6 + (n % 13) * 1e6;
      events.push({ pid: 4242, tid: 4243, cpu: n % 8, timestampNs: t, durationNs: full ? 80e6 + (n % 7) * 1e6 : 150000 + ((n * 7919) % 400000),
        collector: full ? 'G1 Old Generation' : 'G1 Young Generation', kind: full ? 'full' : 'young', operation: full ? 'G1CollectFull' : 'G1CollectForAllocation',
        escalated: false, full,
        pools: [
          { name: 'G1 Eden Space', usedBefore: eden, usedAfter: 0, committedAfter: 64e6 },
          { name: 'G1 Survivor Space', usedBefore: 4e6, usedAfter: 4e6 + (n % 3) * 1e5, committedAfter: 8e6 },
          { name: 'G1 Old Gen', usedBefore: 200e6 + (n % 100) * 1e5, usedAfter: full ? 120e6 : 200e6 + (n % 100) * 1e5 + 2e5, committedAfter: 512e6 },
          { name: 'Metaspace', usedBefore: 30e6, usedAfter: 30e6, committedAfter: 32e6 },
        ] });
    }
    return { type: 'update', update: { events, safepoints: [], safepointsAvailable: false, safepointsReason: 'bench', lost: 0, pids: [4242], startNs, nowNs: startNs + (i + 1) * 5e8 } };
  },
  jvmTimeline(i) {
    // 250 ms slices: 50 GCs/s (each at a safepoint; a full GC a minute), run-queue waits of 20
    // threads, CPU samples at 99 Hz spread over the stacks seen; 200 stacks at first, a new one
    // every 10 slices; off-CPU time of the 20 threads once a second.
    const startNs = 1e12, sliceNs = 2.5e8, s0 = startNs + i * sliceNs, s1 = s0 + sliceNs;
    const gc = [], safepoints = [], runq = [], stacks = [], threads = [];
    const comms = ['main', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5', 'worker-6', 'worker-7', 'worker-8', 'pool-1-thread-1', 'pool-1-thread-2', 'pool-1-thread-3', 'GC Thread#0', 'GC Thread#1', 'G1 Conc#0', 'G1 Refine#0', 'VM Thread', 'C2 CompilerThre', 'C1 CompilerThre', 'Signal Dispatch'];
    if (i === 0) comms.forEach((comm, k) => threads.push({ tid: 5000 + k, comm, group: comm === 'VM Thread' ? 'vm' : /^(GC|G1)/.test(comm) ? 'gc' : /Compiler/.test(comm) ? 'compiler' : comm === 'Signal Dispatch' ? 'jvm' : 'application' }));
    const fresh = i === 0 ? 200 : i % 10 === 0 ? 1 : 0;
    const before = i === 0 ? 0 : 200 + Math.floor((i - 1) / 10);
    for (let k = 0; k < fresh; k++) {
      const n = before + k;
      const frames = [];
      for (let f = 0; f < 12; f++) frames.push({ address: '0x' + (0x400000 + n * 64 + f).toString(16), module: null, function: 'com.example.Service.method' + ((n * 7 + f) % 300), file: null, line: null, kind: 'jit' });
      stacks.push({ tid: 5000 + (n % 12), comm: comms[n % 12], frames });
    }
    const total = before + fresh;
    for (let k = 0; k < 12 + (i % 2); k++) {
      const n = i * 12.5 + k;
      const t = s0 + k * 2e7;
      const full = Math.floor(n) % 3000 === 0 && k === 0;
      const d = full ? 80e6 : 150000 + ((Math.floor(n) * 7919) % 400000);
      const eden = 50e6 + (k % 13) * 1e6;
      gc.push({ pid: 4242, tid: 5016, cpu: 1, timestampNs: t, durationNs: d, collector: full ? 'G1 Old Generation' : 'G1 Young Generation', kind: full ? 'full' : 'young', operation: 'G1CollectForAllocation', escalated: false, full,
        pools: [
          { name: 'G1 Eden Space', usedBefore: eden, usedAfter: 0, committedAfter: 64e6 },
          { name: 'G1 Survivor Space', usedBefore: 4e6, usedAfter: 4e6, committedAfter: 8e6 },
          { name: 'G1 Old Gen', usedBefore: 200e6, usedAfter: full ? 120e6 : 200e6 + 2e5, committedAfter: 512e6 },
          { name: 'Metaspace', usedBefore: 30e6, usedAfter: 30e6, committedAfter: 32e6 },
        ] });
      safepoints.push({ pid: 4242, tid: 5016, timestampNs: t - 20000, timeToSafepointNs: 20000 + (k % 5) * 3000, durationNs: d + 40000, operation: 'G1CollectForAllocation' });
    }
    for (let k = 0; k < 20; k++) {
      const buckets = [];
      for (let b = 3; b < 9; b++) buckets.push({ low: 2 ** (b - 1), high: 2 ** b - 1, count: ((i + k + b) % 4) + 1 });
      runq.push({ startNs: s0, endNs: s1, tid: 5000 + k, buckets });
    }
    const samples = [];
    for (let k = 0; k < 25; k++) samples.push([(i * 31 + k * 17) % total, 1 + (k % 3)]);
    // off-CPU totals once a second: each of the 20 threads, in a state of its own
    const offcpu = [];
    if (i % 4 === 3) {
      const rows = [];
      for (let k = 0; k < 20; k++) rows.push(5000 + k, k % 4, 200000 + ((i * 7 + k * 13) % 700000));
      offcpu.push({ startNs: s1 - 1e9, endNs: s1, rows });
    }
    return { type: 'update', update: { startNs, nowNs: s1, gc, safepoints, safepointsAvailable: true, runq, cpu: [{ startNs: s0, endNs: s1, samples }], stacks, threads, offcpu, lost: 0, dropped: 0 } };
  },
  runqlat(i) {
    // one interval a second, per process: 60 processes, waits across 12 buckets.
    const buckets = (seed, scale) => { const b = []; for (let k = 0; k < 14; k++) { const c = k < 2 ? 0 : Math.round(scale * Math.exp(-Math.abs(k - 6 - (seed % 3)))); b.push({ low: k ? 2 ** (k - 1) : 0, high: k ? 2 ** k - 1 : 0, count: c }); } return b; };
    const keys = [];
    let all = null;
    for (let p = 0; p < 60; p++) {
      const b = buckets(i + p, 40 + (p % 5) * 20);
      keys.push({ key: 1000 + p, comm: 'proc' + p, count: b.reduce((s, x) => s + x.count, 0), buckets: b });
      all = all ? all.map((x, k) => ({ ...x, count: x.count + b[k].count })) : b.map((x) => ({ ...x }));
    }
    return { type: 'update', update: { interval: { timestampNs: 1e12 + i * 1e9, buckets: all }, keys, dropped: 0 } };
  },
};
`;

async function openView(browser: Browser, view: Feeder): Promise<Page> {
  const js = fs.readFileSync(path.join(root, 'dist', 'webview', `${view}.js`), 'utf8');
  const css = fs.readFileSync(path.join(root, 'dist', 'webview', 'common.css'), 'utf8');
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await page.setContent(`<!DOCTYPE html><html><head><style>${css}</style></head><body class="vscode-dark" data-view="${view}"><div id="app"></div></body></html>`);
  // The stand-in for VS Code's webview API: records posts; Stop is answered with `ended` at once.
  await page.addScriptTag({
    content: `
      window.__name = (f) => f;
      window.benchPosted = [];
      window.acquireVsCodeApi = () => ({
        postMessage(m) {
          window.benchPosted.push(m);
          if (m.type === 'stop') { window.benchStopPosted = performance.now(); setTimeout(() => window.dispatchEvent(new MessageEvent('message', { data: { type: 'ended', reason: 'stopped' } })), 0); }
        },
        setState() {},
      });
      ${GENERATORS}`,
  });
  await page.addScriptTag({ content: js });
  return page;
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  samples: number[];
  timeDeltas: number[];
}

/** The functions with the most self time in a CPU profile, one a line: ms, share, name:line. */
function topSelf(p: CpuProfile, n: number): string {
  const byNode = new Map<number, number>();
  p.samples.forEach((id, i) => byNode.set(id, (byNode.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const byName = new Map<string, number>();
  for (const node of p.nodes) {
    const us = byNode.get(node.id) ?? 0;
    const name = `${node.callFrame.functionName || '(anonymous)'}:${node.callFrame.lineNumber + 1}`;
    byName.set(name, (byName.get(name) ?? 0) + us);
  }
  const total = [...byName.values()].reduce((a, b) => a + b, 0) || 1;
  return [...byName.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => `  ${(us / 1000).toFixed(1).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)} %  ${name}`)
    .join('\n');
}

async function heapMb(page: Page): Promise<number> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('Performance.enable');
  const { metrics } = (await cdp.send('Performance.getMetrics')) as { metrics: { name: string; value: number }[] };
  await cdp.detach();
  return (metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? NaN) / 1048576;
}

async function benchView(browser: Browser, view: Feeder, init: unknown, hourTicks: number, tickMs: number, liveTicks: number, fed: string): Promise<LiveViewBench> {
  const page = await openView(browser, view);
  // A view that throws would draw nothing and look fast: any page error fails the row.
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.stack ?? e.message));
  try {
    await page.evaluate((m) => window.dispatchEvent(new MessageEvent('message', { data: m })), init);
    // The hour, in chunks of 30 s of data, a frame drawn after each (as a busy view would).
    const ingestMs = await page.evaluate(
      async ({ view, hourTicks, chunk }) => {
        const gen = (window as unknown as { benchUpdate: Record<string, (i: number) => unknown> }).benchUpdate[view];
        const t0 = performance.now();
        for (let i = 0; i < hourTicks; i += chunk) {
          for (let k = i; k < Math.min(hourTicks, i + chunk); k++) window.dispatchEvent(new MessageEvent('message', { data: gen(k) }));
          await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
        }
        return performance.now() - t0;
      },
      { view, hourTicks, chunk: Math.max(1, Math.round(30_000 / tickMs)) },
    );
    // Live: one update per tick, at the tracer's cadence; the redraw it causes is timed.
    const profileDir = process.env.LIVE_VIEWS_PROFILE;
    const cdp = profileDir ? await page.context().newCDPSession(page) : undefined;
    if (cdp) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
      await cdp.send('Profiler.start');
    }
    const frames = await page.evaluate(
      async ({ view, from, n, tickMs }) => {
        const gen = (window as unknown as { benchUpdate: Record<string, (i: number) => unknown> }).benchUpdate[view];
        const out: number[] = [];
        for (let i = 0; i < n; i++) {
          await new Promise((r) => setTimeout(r, tickMs));
          // Frame callbacks run in the order they were asked for: the first marks the frame's
          // start, the view's render runs next, then the last one; a task posted from it runs
          // once the frame's style, layout and paint are done.
          let t0 = 0;
          requestAnimationFrame(() => (t0 = performance.now()));
          window.dispatchEvent(new MessageEvent('message', { data: gen(from + i) }));
          out.push(
            await new Promise<number>((r) =>
              requestAnimationFrame(() => {
                const ch = new MessageChannel();
                ch.port1.onmessage = () => r(performance.now() - t0);
                ch.port2.postMessage(0);
              }),
            ),
          );
        }
        return out;
      },
      { view, from: hourTicks, n: liveTicks, tickMs },
    );
    if (cdp && profileDir) {
      const { profile } = (await cdp.send('Profiler.stop')) as { profile: CpuProfile };
      await cdp.detach();
      fs.mkdirSync(profileDir, { recursive: true });
      fs.writeFileSync(path.join(profileDir, `${view}.cpuprofile`), JSON.stringify(profile));
      process.stderr.write(`${view}: self time during the live updates\n${topSelf(profile, 15)}\n`);
    }
    const heap = await heapMb(page);
    // Stop while updates keep arriving at the same cadence.
    await page.evaluate(
      ({ view, from, tickMs }) => {
        const w = window as unknown as { benchUpdate: Record<string, (i: number) => unknown>; benchFeed: number; benchClickTs: number; benchStoppedAt: number };
        let i = from;
        w.benchFeed = window.setInterval(() => window.dispatchEvent(new MessageEvent('message', { data: w.benchUpdate[view](i++) })), tickMs);
        document.addEventListener('click', (ev) => (w.benchClickTs = ev.timeStamp), { capture: true });
        const status = document.getElementById('status')!;
        new MutationObserver(() => {
          if (!w.benchStoppedAt && /^Stopped/.test(status.textContent ?? '')) w.benchStoppedAt = performance.now();
        }).observe(status, { childList: true, characterData: true, subtree: true });
      },
      { view, from: hourTicks + liveTicks, tickMs },
    );
    await page.waitForTimeout(tickMs * 2.5);
    await page.click('#stop');
    await page.waitForFunction(() => (window as unknown as { benchStoppedAt?: number }).benchStoppedAt, undefined, { timeout: 60_000 });
    const stopMs = await page.evaluate(() => {
      const w = window as unknown as { benchFeed: number; benchClickTs: number; benchStoppedAt: number };
      clearInterval(w.benchFeed);
      return w.benchStoppedAt - w.benchClickTs;
    });
    if (errors.length) throw new Error(`the ${view} view threw: ${errors.slice(0, 3).join('; ')}`);
    return { view, fed, ingestMs: round(ingestMs, 0), redrawMedianMs: round(median(frames), 1), redrawMaxMs: round(Math.max(...frames), 1), frames: frames.length, heapMb: round(heap, 1), stopMs: round(stopMs, 1) };
  } finally {
    await page.close();
  }
}

export async function benchLiveViews(quick: boolean, only?: string[], executablePath = '/usr/bin/chromium'): Promise<LiveViewBench[]> {
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu', '--headless'] });
  try {
    const live = quick ? 8 : 20;
    const views: [Feeder, unknown, number, number, string][] = [
      ['javaGc', { type: 'init', target: 'pid 4242' }, 7200, 500, '180,000 GCs (an hour at 50/s, 500 ms updates; a full GC a minute), then 50/s'],
      ['runqlat', { type: 'init', scope: 'whole system, per process', per: 'process', unit: 'us' }, 3600, 1000, '3,600 one-second intervals per process (60 processes), then one a second'],
      ['jvmTimeline', { type: 'init', target: 'pid 4242' }, 14400, 250, '14,400 slices of 250 ms (180,000 GCs with 4 pools each and as many safepoints, run-queue waits of 20 threads, 99 Hz CPU samples over 1,640 stacks, off-CPU time of the 20 threads each second), then one slice every 250 ms'],
    ];
    const out: LiveViewBench[] = [];
    for (const [view, init, ticks, tickMs, fed] of views) if (!only || only.includes(view)) out.push(await benchView(browser, view, init, ticks, tickMs, live, fed));
    return out;
  } finally {
    await browser.close();
  }
}

const TITLES: Record<string, string> = { javaGc: 'Java GC view', runqlat: 'run-queue view', jvmTimeline: 'JVM timeline view' };

export async function benchLiveViewRows(ctx: BenchContext): Promise<Row[]> {
  const need = ['javaGc', 'runqlat', 'jvmTimeline'].map((v) => path.join(root, 'dist', 'webview', `${v}.js`));
  if (!fs.existsSync('/usr/bin/chromium') || need.some((f) => !fs.existsSync(f))) {
    ctx.log('  live view rows left out: needs /usr/bin/chromium and the bundled views (npm run build)');
    return [];
  }
  const runs = await benchLiveViews(ctx.quick);
  ctx.log(`  live views: ${JSON.stringify(runs)}`);
  const rows: Row[] = [];
  for (const r of runs) {
    const t = TITLES[r.view];
    const fed = `headless Chromium, 1600 px wide; fed ${r.fed}; took the hour in ${(r.ingestMs / 1000).toFixed(1)} s`;
    rows.push(
      { name: `${t} redraw after an hour (Chromium)`, value: r.redrawMedianMs, unit: 'ms', target: 16, better: 'lower', peer: null, detail: `${fed}; median over ${r.frames} live updates, worst ${r.redrawMaxMs} ms (frame start → render, style, layout and paint done)` },
      { name: `${t} page memory after an hour (Chromium)`, value: r.heapMb, unit: 'MB', target: 100, better: 'lower', peer: null, detail: `${fed}; JS heap after a forced garbage collection (DevTools Performance.getMetrics)` },
      { name: `${t} Stop after an hour (Chromium)`, value: r.stopMs, unit: 'ms', target: 100, better: 'lower', peer: null, detail: `${fed}; click's input event → the view says "Stopped", live updates still arriving (the stand-in host answers Stop at once)` },
    );
  }
  return rows;
}

if (require.main === module) {
  const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  benchLiveViews(process.argv.includes('--quick'), only.length ? only : undefined).then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
