// Flame-graph view in headless Chromium (Debian's /usr/bin/chromium through playwright-core):
// the bundled dist/webview/flamegraph.js gets a 100k-sample / 50k-frame profile; measured are
// the first render (tree build + layout + paint), a paint alone (resize), a zoom by click, and
// a search. Needs `node scripts/build.mjs` first.
// Standalone: node --import tsx bench/flamegraphPaint.ts
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { programLike } from './flamegraphProfile';

export interface PaintBench {
  firstRenderMs: number;
  /** the renderer main thread's CPU time for that task (Chromium trace): what the wall figure is without other load on the machine */
  firstRenderCpuMs: number;
  /** message → the complete tree drawn (the first paint shows a fair part of the stacks) */
  completeMs: number;
  paintMs: number;
  /** median of ZOOM_CLICKS zooms (each from the full graph) */
  zoomClickMs: number;
  /** the first of them: the zoom path's code still cold */
  firstZoomClickMs: number;
  searchMs: number;
  canvasWidth: number;
}

const root = path.resolve(__dirname, '..');
export const ZOOM_CLICKS = 7;

export async function benchFlamegraphPaint(executablePath = '/usr/bin/chromium'): Promise<PaintBench> {
  const js = fs.readFileSync(path.join(root, 'dist/webview/flamegraph.js'), 'utf8');
  const css = fs.readFileSync(path.join(root, 'dist/webview/common.css'), 'utf8');
  const profile = programLike();
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu', '--headless'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.setContent(`<!DOCTYPE html><html><head><style>${css}</style></head><body class="vscode-dark"><div id="app"></div></body></html>`);
    await page.addScriptTag({ content: js });
    // tsx compiles the callbacks below with esbuild's keepNames, which calls __name().
    await page.evaluate('window.__name = (f) => f');
    // In VS Code the profile arrives after the view has loaded and said `ready` (a round trip
    // through the extension host): the empty view has been laid out and painted by then.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    // Parsed in the page beforehand (VS Code hands the view a deserialised message); nothing is
    // returned, or playwright would serialise the whole profile back out of the page.
    await page.evaluate((json) => {
      (window as unknown as { benchProfile: unknown }).benchProfile = JSON.parse(json);
    }, JSON.stringify(profile));
    await browser.startTracing(page, { categories: ['toplevel'] });
    const firstRenderMs = await page.evaluate(() => {
      const data = { type: 'profile', profile: (window as unknown as { benchProfile: unknown }).benchProfile, title: 'bench', warnings: [] };
      const t0 = performance.now();
      (window as unknown as { benchT0: number }).benchT0 = t0;
      window.dispatchEvent(new MessageEvent('message', { data }));
      return performance.now() - t0;
    });
    const trace = JSON.parse((await browser.stopTracing()).toString()) as { traceEvents: { ph: string; name: string; dur?: number; tdur?: number }[] };
    // The longest task in the trace is the one that handled the message.
    const task = trace.traceEvents.filter((e) => e.ph === 'X' && e.name === 'ThreadControllerImpl::RunTask').sort((a, b) => (b.dur ?? 0) - (a.dur ?? 0))[0];
    const firstRenderCpuMs = task?.tdur !== undefined ? task.tdur / 1000 : NaN;
    const completeMs = await page.evaluate(async () => {
      // A big profile is completed in later tasks; the status says so until it is.
      const t0 = (window as unknown as { benchT0: number }).benchT0;
      await new Promise<void>((resolve) => {
        const check = () => (/completing the tree/.test(document.querySelector('.toolbar')!.textContent ?? '') ? setTimeout(check, 1) : resolve());
        check();
      });
      return performance.now() - t0;
    });
    const paintMs = await page.evaluate(async () => {
      // Resizing lays out and paints again; the view reports its own draw time in the status.
      window.dispatchEvent(new Event('resize'));
      await new Promise((r) => setTimeout(r, 120));
      const m = /drawn in ([\d.]+) ms/.exec(document.querySelector('.toolbar')!.textContent ?? '');
      return m ? Number(m[1]) : NaN;
    });
    // Zoom by click, then back with "Reset zoom" (not timed), several times: a frame budget is
    // about every click, so the figure is the median; the first, cold one is reported beside it.
    const zooms = await page.evaluate((clicks) => {
      const canvas = document.querySelector('canvas')!;
      const reset = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Reset zoom')!;
      const out: number[] = [];
      for (let i = 0; i < clicks; i++) {
        const r = canvas.getBoundingClientRect();
        // Second row from the bottom (flame orientation), left part: a big frame.
        const t0 = performance.now();
        canvas.dispatchEvent(new MouseEvent('click', { clientX: r.left + 20, clientY: r.bottom - 17 * 2 + 5, bubbles: true }));
        out.push(performance.now() - t0);
        reset.click();
      }
      return out;
    }, ZOOM_CLICKS);
    const zoomClickMs = [...zooms].sort((a, b) => a - b)[Math.floor(zooms.length / 2)];
    const searchMs = await page.evaluate(async () => {
      const box = document.getElementById('search') as HTMLInputElement;
      box.value = 'HashMap.method1';
      const t0 = performance.now();
      box.dispatchEvent(new Event('input'));
      await new Promise<void>((resolve) => {
        const check = () => (/matched/.test(document.querySelector('.toolbar')!.textContent ?? '') ? resolve() : setTimeout(check, 5));
        check();
      });
      return performance.now() - t0 - 120; // minus the view's typing debounce
    });
    const canvasWidth = await page.evaluate(() => document.querySelector('canvas')!.clientWidth);
    const round = (n: number) => Math.round(n * 10) / 10;
    return { firstRenderMs: round(firstRenderMs), firstRenderCpuMs: round(firstRenderCpuMs), completeMs: round(completeMs), paintMs: round(paintMs), zoomClickMs: round(zoomClickMs), firstZoomClickMs: round(zooms[0]), searchMs: round(searchMs), canvasWidth };
  } finally {
    await browser.close();
  }
}

if (require.main === module) {
  benchFlamegraphPaint().then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (e) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
