// Editor step for "a user never loses a session": the Java GC and the leak sessions
// that earlier steps of the same editor session ran to their end (a real JVM's GCs; leaky's leaks
// under Run with Leak Tracing) are listed in the eBPF Sessions view, and their panels, left open,
// come back after "Developer: Reload Window" showing what they showed before: the same GC count,
// collector, safepoint and pool figures with the histogram and timeline drawn; the same leak rows,
// frames and totals, whose frames still open their source line.
// Also the Sessions view helpers the sessions test uses.
import assert from 'node:assert/strict';
import path from 'node:path';
import type { Frame } from 'playwright-core';
import type { TestContext } from 'node:test';
import { canvasColorPixels, type EditorSession } from './codeServer';
import { cursorLineAfterOpen, lineOf } from './editorDom';

/** The Sessions tree's row whose label contains (or matches) `text`. */
export function sessionRow(s: EditorSession, text: string | RegExp) {
  return s.page.locator('.pane-body .monaco-list-row', { hasText: text }).first();
}

export async function showSessionsView(s: EditorSession): Promise<void> {
  // The eBPF item in the activity bar, as a user would (a click on a shown container hides it).
  const item = s.page.locator('.activitybar .action-item a[aria-label^="eBPF"], .activitybar .action-item[aria-label^="eBPF"]').first();
  await item.waitFor({ state: 'visible', timeout: 15_000 });
  const title = s.page.locator('.sidebar .composite.title .title-label', { hasText: /eBPF/i });
  if (!(await title.isVisible())) await item.click();
  await title.waitFor({ state: 'visible', timeout: 15_000 });
}

/** Brings the editor tab labelled `label` to the front (a restored webview loads only when shown). */
async function showTab(s: EditorSession, label: string): Promise<void> {
  const tab = s.page.locator('.tabs-container .tab').filter({ has: s.page.locator('.label-name', { hasText: new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) }).first();
  await tab.waitFor({ state: 'visible', timeout: 30_000 });
  await tab.click();
}

interface GcShown {
  count: string;
  collectors: string[];
  pools: string[];
  safepoints: string;
  status: string;
  bars: number;
  timeline: number;
}

const SERIES = ['--vscode-charts-blue:#3794ff', '--vscode-charts-red:#f14c4c'];

/** What the Java GC panel shows, once it shows at least one GC (a restored view replays its updates). */
async function gcShown(s: EditorSession, frame: Frame): Promise<GcShown> {
  await frame.locator('#card-count .value').filter({ hasText: /^[1-9][\d,]*$/ }).waitFor({ timeout: 20_000 });
  await s.page.waitForTimeout(300); // one more frame: the view draws once per animation frame
  return {
    count: (await frame.locator('#card-count .value').innerText()).trim(),
    collectors: (await frame.locator('#collectors tr').allInnerTexts()).map((r) => r.trim()),
    pools: (await frame.locator('#pools tr').allInnerTexts()).map((r) => r.trim()),
    safepoints: (await frame.locator('#safepoints').innerText()).trim(),
    status: (await frame.locator('#status').innerText()).trim(),
    bars: await canvasColorPixels(frame, 'histogram', SERIES, { skipTopPx: 20 }),
    timeline: await canvasColorPixels(frame, 'timeline', SERIES),
  };
}

interface LeaksShown {
  status: string;
  rows: string[];
  /** each row's frames (shown when the row is expanded) */
  frames: string[];
}

/** What the leak panel shows, once it lists stacks. */
async function leaksShown(frame: Frame): Promise<LeaksShown> {
  await frame.locator('details > summary').first().waitFor({ timeout: 20_000 });
  return {
    status: (await frame.locator('.toolbar .status').innerText()).trim(),
    rows: (await frame.locator('details > summary').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim()),
    frames: await frame.locator('details > ol.frames').evaluateAll((ols) => ols.map((ol) => Array.from(ol.children, (li) => li.textContent ?? '').join(' / '))),
  };
}

/**
 * Needs, open in the editor: the finished "Java GC: pid N" panel (when `gc`) and the "Leaks of leaky (pid N)"
 * panel of a finished Run with Leak Tracing. Ends with every editor closed and the leaks cleared.
 */
export async function sessionsRestoreStep(t: TestContext, s: EditorSession, opts: { gc: boolean }): Promise<void> {
  // Before: what the panels of the live sessions show, and their rows in the Sessions view.
  await showSessionsView(s);
  const leakRow = sessionRow(s, /Leaks of /);
  await leakRow.waitFor({ state: 'visible', timeout: 15_000 });
  const leakTitle = (await leakRow.locator('.label-name').first().innerText()).trim();
  let gcTitle = '';
  let gcBefore: GcShown | undefined;
  if (opts.gc) {
    const gcRow = sessionRow(s, /Java GC: pid \d+/);
    await gcRow.waitFor({ state: 'visible', timeout: 15_000 });
    gcTitle = (await gcRow.locator('.label-name').first().innerText()).trim();
    await showTab(s, gcTitle);
    gcBefore = await gcShown(s, await s.webviewFrame(gcTitle));
    assert.match(gcBefore.status, /Process exited/, `the GC session has not ended: ${gcBefore.status}`);
  }
  // The leak panel's tab names the process: "Leaks of leaky (pid N)", the session's title.
  await showTab(s, leakTitle);
  const leaksBefore = await leaksShown(await s.webviewFrame(leakTitle));
  assert.match(leaksBefore.status, /· stopped ·/, `the leak session has not ended: ${leaksBefore.status}`);
  await s.screenshot('sessions-view-gc-and-leaks');

  const reloadStarted = Date.now();
  await s.reloadWindow();

  // After: each panel comes back (under its session's title) and shows the same data.
  if (opts.gc && gcBefore) {
    await showTab(s, gcTitle);
    const frame = await s.webviewFrame(gcTitle, 60_000);
    const gcAfter = await gcShown(s, frame);
    assert.equal(gcAfter.count, gcBefore.count, 'the restored GC panel counts other GCs than before the reload');
    assert.deepEqual(gcAfter.collectors, gcBefore.collectors, 'the restored GC panel\'s collector rows differ');
    assert.equal(gcAfter.status, gcBefore.status, 'the restored GC panel\'s status differs');
    assert.equal(gcAfter.safepoints, gcBefore.safepoints, 'the restored GC panel\'s safepoint figures differ');
    assert.deepEqual(gcAfter.pools, gcBefore.pools, 'the restored GC panel\'s memory pool rows differ');
    assert.ok(gcAfter.bars > 50, `the restored GC panel's histogram shows no bars (${gcAfter.bars} bar-coloured pixels)`);
    assert.ok(gcAfter.timeline > 0, 'the restored GC panel\'s pause timeline is empty');
    await s.screenshot('sessions-restored-java-gc', await s.webviewElement(frame));
    t.diagnostic(`GC panel after the reload: ${gcAfter.count}; ${gcAfter.collectors.slice(1).join(' | ')}; histogram ${gcAfter.bars} bar pixels (before ${gcBefore.bars}), timeline ${gcAfter.timeline} (before ${gcBefore.timeline})`);
  }
  // Restored, the leak panel carries the same title.
  await showTab(s, leakTitle);
  const frame = await s.webviewFrame(leakTitle, 60_000);
  const leaksAfter = await leaksShown(frame);
  assert.equal(leaksAfter.status, leaksBefore.status, 'the restored leak panel\'s totals differ');
  assert.deepEqual(leaksAfter.rows, leaksBefore.rows, 'the restored leak panel lists other stacks');
  assert.deepEqual(leaksAfter.frames, leaksBefore.frames, 'the restored leak panel\'s stacks have other frames');
  assert.ok(leaksAfter.rows.length > 0);
  await s.screenshot('sessions-restored-leaks', await s.webviewElement(frame));
  t.diagnostic(`leak panel after the reload (${((Date.now() - reloadStarted) / 1000).toFixed(1)} s after Reload): ${leaksAfter.status}; ${leaksAfter.rows.length} rows`);
  // The restored panel is live, not a picture: a frame with a source line opens it.
  const row = frame.locator('details', { hasText: 'leak_malloc' }).first();
  await row.locator('summary').click();
  const link = row.locator('li.link', { hasText: /^leak_malloc — leaky\.c:\d+$/ }).first();
  const line = Number(/:(\d+)$/.exec((await link.innerText()).trim())![1]);
  assert.equal(line, lineOf(path.join(s.workspace, 'leaky.c'), 'LEAK-MALLOC'), 'leak_malloc\'s frame is not on the leaking line');
  await link.click();
  const cursor = await cursorLineAfterOpen(s, 'leaky.c', line);
  assert.equal(cursor, line, `a click on leak_malloc's frame in the restored panel left the cursor on leaky.c:${cursor}, not ${line}`);
  await s.page.keyboard.press('Escape');
  await s.page.locator('.monaco-workbench').first().click({ position: { x: 5, y: 5 } });

  // Both are still listed after the reload.
  await showSessionsView(s);
  await sessionRow(s, leakTitle).waitFor({ state: 'visible', timeout: 15_000 });
  if (opts.gc) await sessionRow(s, gcTitle).waitFor({ state: 'visible', timeout: 15_000 });
  await s.runCommandFromPalette('eBPF: Clear Memory Leaks');
  await s.runCommandFromPalette('View: Close All Editors');
}
