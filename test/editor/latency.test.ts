// "Measure latency" in a real VS Code (code-server): once eBPF Studio runs (here: the palette
// command, with the cursor outside any function), the CodeLens on a C function's definition of a
// workspace program, clicked as a user would, asks for the running process and the slow-call
// threshold, then reads the live figures ("p50 … · p99 … · … calls/s") while the panel draws the
// histogram and lists the slow calls with their stacks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { canvasColorPixels, repoRoot, skipReason } from './codeServer';
import { codeLenses, cursorLineAfterOpen, lineOf, openWorkspaceFile, waitForCodeLenses } from './editorDom';
import { kernelSkipReason } from '../helpers';
import { startSession, step } from './steps';

test('Measure latency from a CodeLens in a real VS Code (code-server)', { skip: skipReason() ?? kernelSkipReason(), timeout: 300_000 }, async (t) => {
  const s = await startSession(t);
  await step(t, s, 'the lens on lat_work measures it in the running program and shows p50/p99/calls per second live', async () => {
    await s.waitForCommand('eBPF: Measure Function Latency');
    for (const f of ['main.c', 'work.c', 'work.h']) fs.copyFileSync(path.join(repoRoot, 'test/fixtures/c/latency', f), path.join(s.workspace, f));
    const cc = spawnSync('gcc', ['-O2', '-g', '-pthread', 'main.c', 'work.c', '-o', 'latwork'], { cwd: s.workspace, encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    const work = spawn(path.join(s.workspace, 'latwork'), ['calls', '100000'], { cwd: s.workspace, stdio: ['pipe', 'ignore', 'ignore'] });
    t.after(() => work.kill('SIGKILL'));
    work.stdin.write('g');
    const pid = work.pid!;
    const line = lineOf(path.join(s.workspace, 'work.c'), /^long lat_work\(/);
    const editor = await openWorkspaceFile(s, 'work.c');
    // The extension starts for C files only once something of it runs (never for every C file):
    // the palette command, with the cursor above any function, says where to put it and starts it.
    await s.runCommandFromPalette('eBPF: Measure Function Latency');
    await s.page.locator('.notifications-toasts .notification-list-item-message', { hasText: /Measure latency/ }).first().waitFor({ timeout: 15_000 });
    const lenses = await waitForCodeLenses(editor, (all) => all.some((l) => l.line === line && /Measure latency/.test(l.text)));
    assert.ok(lenses.some((l) => l.line === line && /Measure latency/.test(l.text)), `no Measure latency lens on work.c:${line}: ${JSON.stringify(lenses)}`);
    // codeLenses() lists the decorations in DOM order: click the one above lat_work's line
    const index = (await codeLenses(editor)).findIndex((l) => l.line === line && /Measure latency/.test(l.text));
    assert.ok(index >= 0, 'the lens on lat_work scrolled away');
    await editor.locator('.codelens-decoration').nth(index).locator('a').first().click();
    await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Measure latency of lat_work: process' }).waitFor({ timeout: 30_000 });
    await s.page.locator('.quick-input-widget .quick-input-box input').fill(String(pid));
    await s.pickQuickPickItem(new RegExp(`\\b${pid}\\s+latwork`));
    await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'slow-call threshold' }).waitFor({ timeout: 10_000 });
    await s.page.keyboard.press('Enter');
    const live = await waitForCodeLenses(editor, (all) => all.some((l) => l.line === line && /p50 .+ · p99 .+ · .+ calls\/s/.test(l.text)), 60_000);
    const shown = live.find((l) => l.line === line);
    assert.match(shown?.text ?? '', /p50 1\.\d+ ms · p99 \d+(\.\d+)? ms · \d+(\.\d)? calls\/s/, JSON.stringify(live));
    const frame = await s.webviewFrame('Latency: lat_work');
    await frame.locator('#slow-calls details').first().waitFor({ timeout: 30_000 });
    const firstSlow = await frame.locator('#slow-calls details').first().innerText();
    assert.match(firstSlow, /ms · thread \d+/);
    assert.ok((await canvasColorPixels(frame, 'histogram', ['--vscode-charts-blue:#3794ff'], { skipTopPx: 20 })) > 50, 'the histogram is blank');
    await s.screenshot('latency-lens');
    await frame.locator('#stop').click();
    await frame.locator('#status').filter({ hasText: /Stopped/ }).waitFor({ timeout: 15_000 });
    const after = await waitForCodeLenses(editor, (all) => all.some((l) => l.line === line && /stopped/.test(l.text)), 15_000);
    t.diagnostic(`lens while running: "${shown?.text}"; after Stop: "${after.find((l) => l.line === line)?.text}"`);
  });
  await step(t, s, 'Profile the slow calls from the panel: measured again, and at Stop the flame graph of only the slow calls, asleep', async () => {
    const pid = Number(/pid (\d+)/.exec(await (await s.webviewFrame('Latency: lat_work')).locator('#title').innerText())?.[1]);
    await (await s.webviewFrame('Latency: lat_work')).locator('#profile-slow').click();
    // the same threshold: no question; the panel is replaced by one that measures with the profile on
    let frame: Awaited<ReturnType<typeof s.webviewFrame>> | undefined;
    for (const deadline = Date.now() + 30_000; !frame && Date.now() < deadline; ) {
      await s.page.waitForTimeout(500);
      const f = await s.webviewFrame('Latency: lat_work').catch(() => undefined);
      const on = await f?.locator('#profile-slow', { hasText: /Profiling the slow calls/ }).waitFor({ timeout: 2000 }).then(() => true).catch(() => false);
      if (on) frame = f;
    }
    assert.ok(frame, 'no panel profiling the slow calls');
    await frame.locator('#slow-calls details').first().waitFor({ timeout: 30_000 });
    await frame.locator('#stop').click();
    const flame = await s.webviewFrame(`Slow calls of lat_work (≥ 10 ms, pid ${pid})`, 60_000);
    const legend = flame.locator('.legend');
    await legend.filter({ hasText: /Where the time went:/ }).waitFor({ timeout: 30_000 });
    const text = (await legend.innerText()).replace(/\s+/g, ' ');
    assert.match(text, /sleeping [\d.]+ (µs|ms|s) \([\d.]+ %\)/, `the slow calls slept: ${text}`);
    await flame.locator('#search').fill('lat_work');
    await flame.locator('.toolbar .status', { hasText: /^matched [1-9]/ }).waitFor({ timeout: 5000 });
    await s.screenshot('latency-slow-calls-flamegraph', await s.webviewElement(flame));
    t.diagnostic(`slow calls' flame graph legend: ${text}`);
  });
  const jdk = '/usr/lib/jvm/java-17-openjdk-amd64';
  const noJava = !fs.existsSync(`${jdk}/bin/javac`) || !fs.existsSync(path.join(repoRoot, 'dist/ebpf-studio-javalatency.jar')) ? 'no JDK 17, or the latency agent jar is not built' : undefined;
  await step(t, s, 'the lens on a Java method measures it in a running JVM (JDK 17, no restart)', async () => {
    fs.copyFileSync(path.join(repoRoot, 'test/fixtures/java/LatencyAgentTarget.java'), path.join(s.workspace, 'LatencyAgentTarget.java'));
    const jc = spawnSync(`${jdk}/bin/javac`, ['-d', path.join(s.workspace, 'classes'), 'LatencyAgentTarget.java'], { cwd: s.workspace, encoding: 'utf8' });
    assert.equal(jc.status, 0, jc.stderr);
    const jvm = spawn(`${jdk}/bin/java`, ['-cp', 'classes', 'LatencyAgentTarget'], { cwd: s.workspace, stdio: ['pipe', 'ignore', 'ignore'] });
    t.after(() => jvm.kill('SIGKILL'));
    const line = lineOf(path.join(s.workspace, 'LatencyAgentTarget.java'), /static long work\(int i\)/);
    const editor = await openWorkspaceFile(s, 'LatencyAgentTarget.java');
    await waitForCodeLenses(editor, (all) => all.some((l) => l.line === line && /Measure latency/.test(l.text)), 30_000);
    const index = (await codeLenses(editor)).findIndex((l) => l.line === line && /Measure latency/.test(l.text));
    assert.ok(index >= 0, 'no Measure latency lens on LatencyAgentTarget.work');
    await editor.locator('.codelens-decoration').nth(index).locator('a').first().click();
    await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Measure latency of LatencyAgentTarget.work: JVM' }).waitFor({ timeout: 30_000 });
    await s.page.locator('.quick-input-widget .quick-input-box input').fill(String(jvm.pid));
    await s.pickQuickPickItem(new RegExp(`\\b${jvm.pid}\\s+LatencyAgentTarget`), 30_000);
    await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'slow-call threshold' }).waitFor({ timeout: 10_000 });
    await s.page.keyboard.press('Enter');
    // 4 calls in 5 spin ~1 ms, the fifth sleeps 20 ms: p50 about a millisecond, p99 about 20 (once
    // enough calls are in: the first second's few calls on a loaded machine may not show it yet)
    const expected = /p50 1\.\d+ ms · p99 (19|2\d)(\.\d+)? ms/;
    const live = await waitForCodeLenses(editor, (all) => all.some((l) => l.line === line && expected.test(l.text)), 60_000);
    const shown = live.find((l) => l.line === line)?.text ?? '';
    assert.match(shown, expected, JSON.stringify(live));
    const frame = await s.webviewFrame('Latency: LatencyAgentTarget.work');
    await frame.locator('#stop').click();
    await frame.locator('#status').filter({ hasText: /Stopped/ }).waitFor({ timeout: 30_000 });
    t.diagnostic(`Java lens while running: "${shown}"`);
    // Split by caller: measured again, a row per calling Class.method; the row opens the line of the call
    await frame.locator('#by-caller').click();
    const callerRow = (f: typeof frame) => f.locator('#callers tr', { hasText: 'LatencyAgentTarget.timedWork' });
    let split: typeof frame | undefined;
    for (const deadline = Date.now() + 60_000; !split && Date.now() < deadline; ) {
      await s.page.waitForTimeout(500);
      const f = await s.webviewFrame('Latency: LatencyAgentTarget.work').catch(() => undefined);
      if (f && (await callerRow(f).count().catch(() => 0)) > 0) split = f;
    }
    assert.ok(split, 'no "By caller" row for LatencyAgentTarget.timedWork');
    const rowText = (await callerRow(split).innerText()).replace(/\s+/g, ' ');
    await callerRow(split).locator('td').first().click();
    const callLine = lineOf(path.join(s.workspace, 'LatencyAgentTarget.java'), "timedWork's call");
    assert.equal(await cursorLineAfterOpen(s, 'LatencyAgentTarget.java', callLine), callLine, 'the caller row opens the line of the call');
    await split.locator('#stop').click();
    await split.locator('#status').filter({ hasText: /Stopped/ }).waitFor({ timeout: 30_000 });
    t.diagnostic(`Java by caller: "${rowText}", opens LatencyAgentTarget.java:${callLine}`);
  }, noJava);
});
