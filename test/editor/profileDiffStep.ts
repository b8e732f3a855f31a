// Editor step for "Compare CPU Profiles…": two real profiles of the CPU-split fixture whose hot
// function changes (hot_a 3/4, then hot_b 3/4), written with `profile --pprof`, picked through
// VS Code's open dialogs; the diff panel's movers table must lead with hot_a shrinking and
// hot_b growing, and the graph must be drawn in both diff colours' legend.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { TestContext } from 'node:test';
import type { EditorSession } from './codeServer';
import { buildCFixture } from './editorDom';
import { runCli, sleep } from '../helpers';

async function profileFixture(t: TestContext, binary: string, variant: 'a' | 'b', file: string): Promise<void> {
  const child = spawn(binary, ['30', variant], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  await sleep(200);
  const r = runCli(['profile', '--pid', String(child.pid), '--frequency', '499', '--duration', '3', '--pprof', file], { timeoutMs: 40_000 });
  child.kill('SIGKILL');
  assert.equal(r.code, 0, `profile --pprof failed: ${r.stderr}`);
}

/** Types a full path into VS Code's (simple) open dialog and accepts it. */
async function chooseFile(s: EditorSession, title: RegExp, file: string): Promise<void> {
  await s.page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ timeout: 15_000 });
  const input = s.page.locator('.quick-input-widget .quick-input-box input');
  // The dialog sets its own default path once it has listed the folder, which can overwrite what
  // was typed before that: type again until the path stays.
  for (let i = 0; i < 20; i++) {
    await input.fill(file);
    await s.page.waitForTimeout(300);
    if ((await input.inputValue()) === file) break;
  }
  await input.press('Enter');
}

export async function compareProfilesStep(t: TestContext, s: EditorSession): Promise<void> {
  const { binary } = buildCFixture(s, 'cpusplit');
  const base = path.join(s.workspace, 'cpusplit-a.pb.gz');
  const next = path.join(s.workspace, 'cpusplit-b.pb.gz');
  await profileFixture(t, binary, 'a', base);
  await profileFixture(t, binary, 'b', next);
  await s.runCommandFromPalette('eBPF: Compare CPU Profiles…');
  await chooseFile(s, /the base/, base);
  await chooseFile(s, /the new profile/, next);
  const frame = await s.webviewFrame('CPU diff: cpusplit-a.pb.gz → cpusplit-b.pb.gz', 30_000);
  const rows = frame.locator('.diff-movers tbody tr');
  await rows.first().waitFor({ timeout: 15_000 });
  const top = (await rows.evaluateAll((trs) => trs.slice(0, 2).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')))) as string[][];
  t.diagnostic(`movers: ${top.map((r) => r.join(' | ')).join(' || ')}`);
  const byName = new Map(top.map((r) => [r[0], r]));
  assert.ok(byName.has('hot_a') && byName.has('hot_b'), `the movers table does not lead with hot_a and hot_b: ${JSON.stringify(top)}`);
  assert.match(byName.get('hot_a')![1], /^−\d/, 'hot_a shrank');
  assert.match(byName.get('hot_b')![1], /^\+\d/, 'hot_b grew');
  const legend = await frame.locator('.legend').innerText();
  assert.match(legend, /shrank[\s\S]*grew/);
  const drawn = await frame.locator('.scroll canvas').first().evaluate((c: HTMLCanvasElement) => {
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let red = 0;
    let blue = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] === 0) continue;
      if (d[i] > d[i + 2] + 60) red++;
      else if (d[i + 2] > d[i] + 60) blue++;
    }
    return { red, blue };
  });
  assert.ok(drawn.red > 0 && drawn.blue > 0, `the diff graph should hold red (grew) and blue (shrank) boxes: ${JSON.stringify(drawn)}`);
  await s.screenshot('profile-diff', await s.webviewElement(frame));
  await s.runCommandFromPalette('View: Close All Editors');
}
