// Sessions in a real VS Code (code-server): a finished run-queue session is listed in the eBPF
// Sessions view and its panel comes back after "Reload Window" (and reopens from the view);
// a `.folded` file double-clicked in the Explorer opens in the flame graph, which zooms and
// resets with the keyboard alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Frame } from 'playwright-core';
import { canvasColorPixels, skipReason } from './codeServer';
import { kernelSkipReason } from '../helpers';
import { startSession, step } from './steps';
import { sessionRow, showSessionsView } from './sessionsRestoreStep';

const FOLDED = ['main;parse;lex 30', 'main;compute;hot 60', 'main 10', ''].join('\n');
const RUNQLAT_TITLE = 'Run Queue Latency: whole system';

async function histogramBars(frame: Frame): Promise<number> {
  return canvasColorPixels(frame, 'histogram', ['--vscode-charts-blue:#3794ff', '--vscode-charts-red:#f14c4c'], { skipTopPx: 20 });
}

test('Sessions view, reload and file editors in a real VS Code (code-server)', { skip: skipReason(), timeout: 400_000 }, async (t) => {
  const s = await startSession(t, { files: { 'profiles/hot.folded': FOLDED } });

  await step(
    t,
    s,
    'a finished run-queue session is listed in the Sessions view and its panel comes back after a reload',
    async () => {
      await s.runCommandFromPalette('eBPF: Show Run Queue Latency');
      await s.pickQuickPickItem('Whole system', 30_000);
      await s.pickQuickPickItem('Microseconds');
      let frame = await s.webviewFrame(RUNQLAT_TITLE, 30_000);
      // Two intervals of data, then Stop in the panel.
      const deadline = Date.now() + 20_000;
      while ((await histogramBars(frame)) === 0 && Date.now() < deadline) await s.page.waitForTimeout(500);
      assert.ok((await histogramBars(frame)) > 0, 'the run-queue histogram drew no bars while tracing');
      await frame.locator('button', { hasText: /^Stop$/ }).click();
      await showSessionsView(s);
      const row = sessionRow(s, RUNQLAT_TITLE);
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      await s.screenshot('sessions-view-finished');

      await s.reloadWindow();
      // The serializer restores the panel from the stored session: same title, bars drawn again.
      frame = await s.webviewFrame(RUNQLAT_TITLE, 60_000);
      const again = Date.now() + 20_000;
      while ((await histogramBars(frame)) === 0 && Date.now() < again) await s.page.waitForTimeout(500);
      assert.ok((await histogramBars(frame)) > 0, 'the restored run-queue panel shows no bars');
      await s.screenshot('sessions-restored-panel', await s.webviewElement(frame));

      // Still listed after the reload; Open from the view shows it once more.
      await s.runCommandFromPalette('View: Close All Editors');
      await showSessionsView(s);
      await sessionRow(s, RUNQLAT_TITLE).waitFor({ state: 'visible', timeout: 15_000 });
      await sessionRow(s, RUNQLAT_TITLE).click();
      frame = await s.webviewFrame(RUNQLAT_TITLE, 30_000);
      const third = Date.now() + 20_000;
      while ((await histogramBars(frame)) === 0 && Date.now() < third) await s.page.waitForTimeout(500);
      assert.ok((await histogramBars(frame)) > 0, 'the session reopened from the Sessions view shows no bars');
      await s.runCommandFromPalette('View: Close All Editors');
    },
    kernelSkipReason(),
  );

  await step(t, s, 'a .folded file double-clicked in the Explorer opens in the flame graph', async () => {
    await s.runCommandFromPalette('View: Show Explorer');
    const folder = s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: /^profiles$/ }).first();
    await folder.waitFor({ state: 'visible', timeout: 15_000 });
    if ((await folder.getAttribute('aria-expanded')) !== 'true') await folder.click();
    const file = s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: /^hot\.folded$/ }).first();
    await file.waitFor({ state: 'visible', timeout: 15_000 });
    await file.dblclick();
    const frame = await s.webviewFrame('CPU: hot.folded', 30_000);
    await frame.locator('.toolbar .status', { hasText: /100 samples/ }).waitFor({ timeout: 15_000 });
    const drawn = await frame.locator('.scroll canvas').first().evaluate((c: HTMLCanvasElement) => {
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n / (c.width * c.height);
    });
    assert.ok(drawn > 0.2, `the flame graph of hot.folded is nearly empty (${(drawn * 100).toFixed(1)} % drawn)`);
    // The top-functions table lists hot first by self samples.
    const firstRow = frame.locator('.top tbody tr').first();
    await firstRow.waitFor({ timeout: 10_000 });
    assert.match(await firstRow.innerText(), /^hot\b[\s\S]*60/);
  });

  await step(t, s, 'the flame graph zooms and resets with the keyboard alone', async () => {
    const frame = await s.webviewFrame('CPU: hot.folded', 10_000);
    const canvas = frame.locator('.scroll canvas').first();
    await canvas.focus();
    // Flame orientation: up goes toward the leaves (the widest child), Enter zooms.
    await canvas.press('ArrowUp');
    await canvas.press('ArrowUp');
    assert.match((await canvas.getAttribute('aria-label')) ?? '', /Selected compute: 60\.00% total/);
    await canvas.press('Enter');
    const crumbs = frame.locator('.crumbs');
    await crumbs.filter({ hasText: 'all › main › compute' }).waitFor({ timeout: 5000 });
    assert.match((await canvas.getAttribute('aria-label')) ?? '', /^Flame graph, zoomed\./);
    // Esc resets; Right then goes to the neighbour at the same depth (parse: boxes are by name),
    // Enter zooms there.
    await canvas.press('Escape');
    await crumbs.filter({ hasText: /^all$/ }).waitFor({ timeout: 5000 });
    await canvas.press('ArrowRight');
    assert.match((await canvas.getAttribute('aria-label')) ?? '', /Selected parse: 30\.00% total/);
    await canvas.press('Enter');
    await crumbs.filter({ hasText: 'all › main › parse' }).waitFor({ timeout: 5000 });
    await s.screenshot('flamegraph-keyboard-zoom', await s.webviewElement(frame));
    await canvas.press('Escape');
    await crumbs.filter({ hasText: /^all$/ }).waitFor({ timeout: 5000 });
    // `/` moves to the search box.
    await canvas.press('/');
    assert.equal(await frame.evaluate(() => document.activeElement?.id), 'search');
  });
});
