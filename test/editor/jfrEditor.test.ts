// A Java Flight Recording opened by a double-click in a real VS Code (code-server): the recording
// is made in the test by OpenJDK 17 (test/fixtures/java/JfrWorkload.java). Its events are offered in
// a Quick Pick with their counts; CPU samples open the flame graph with the hot method in it, GCs
// the Java GC view; a truncated copy shows the byte offset where it stops, and the window keeps
// working. The workload's source in the workspace gets the CPU CodeLens on hotLoop's definition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { skipReason } from './codeServer';
import { startSession, step } from './steps';
import { compileJavaFixture, removeJavaFixture, repoRoot } from '../helpers';
import { openInExplorer, openWorkspaceFile, selectTimelineRange, waitForCodeLenses } from './editorDom';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const skip = skipReason() ?? (!fs.existsSync(`${JDK}/bin/javac`) ? `no JDK 17 at ${JDK}` : undefined);

test('a .jfr file opens in the flame graph, the GC view and the JVM timeline (code-server)', { skip, timeout: 300_000 }, async (t) => {
  const { work, classes } = compileJavaFixture('ebpf-jfr-editor-', 'JfrWorkload.java', JDK);
  t.after(() => removeJavaFixture([], work));
  const rec = path.join(work, 'rec.jfr');
  const j = spawnSync(`${JDK}/bin/java`, ['-Xms256m', '-Xmx256m', `-XX:StartFlightRecording=filename=${rec}`, '-cp', classes, 'JfrWorkload', '2'], { encoding: 'utf8', timeout: 60_000 });
  if (j.status !== 0) throw new Error(`java: ${j.stderr}`);
  // the workload's source in the workspace: its lines get the CPU CodeLens (a default-package class: JfrWorkload.java)
  const src = fs.readFileSync(path.join(repoRoot, 'test/fixtures/java/JfrWorkload.java'), 'utf8');
  const s = await startSession(t, { files: { 'recordings/README.txt': 'JFR recordings\n', 'JfrWorkload.java': src } });
  const bytes = fs.readFileSync(rec);
  fs.writeFileSync(path.join(s.workspace, 'recordings', 'rec.jfr'), bytes);
  fs.writeFileSync(path.join(s.workspace, 'recordings', 'cut.jfr'), bytes.subarray(0, bytes.length >> 1));

  // a double-click before the workbench has scanned the extensions opens the text editor: wait for one of ours
  await s.waitForCommand('eBPF: Check This Machine (Doctor)');
  await s.page.keyboard.press('Escape');

  const open = (name: string) => openInExplorer(s, 'recordings', name);

  await step(t, s, 'CPU samples open the flame graph and CodeLens on the hot method', async () => {
    await open('rec.jfr');
    await s.pickQuickPickItem(/CPU samples/, 30_000);
    const frame = await s.webviewFrame('CPU: rec.jfr', 30_000);
    await frame.locator('.toolbar .status', { hasText: /samples/ }).waitFor({ timeout: 15_000 });
    await s.screenshot('jfr-flamegraph');
    const editor = await openWorkspaceFile(s, 'JfrWorkload.java');
    const hotLine = src.split('\n').findIndex((l) => /static long hotLoop\(/.test(l)) + 1;
    // lenses render before the editor's lines settle: wait for the lens at its line, not only its text
    const lenses = await waitForCodeLenses(editor, (all) => all.some((l) => /^CPU \d+(\.\d+)?% total/.test(l.text) && /hotLoop/.test(l.text) && l.line === hotLine), 30_000);
    const hot = lenses.find((l) => /hotLoop/.test(l.text));
    assert.equal(hot?.line, hotLine, `the hotLoop lens sits on its definition: ${JSON.stringify(lenses)}`);
    await s.runCommandFromPalette('View: Close All Editors');
  });

  await step(t, s, 'garbage collections open the Java GC view, with the pauses\' phases', async () => {
    await open('rec.jfr');
    await s.pickQuickPickItem(/Garbage collections/, 30_000);
    const frame = await s.webviewFrameWithText(/G1 Young Generation/, 30_000);
    // the recording's pause phases, which the live tracer does not have
    const phases = await frame.locator('#phases tr').count();
    assert.ok(phases > 1, `a pause-phase table (rows: ${phases})`);
    assert.match(await frame.locator('#phases').innerText(), /References/);
    await s.runCommandFromPalette('View: Close All Editors');
  });

  await step(t, s, 'the JVM timeline shows the recording\'s GCs, CPU samples and lock waits on one clock', async () => {
    await open('rec.jfr');
    await s.pickQuickPickItem(/JVM timeline/, 30_000);
    const frame = await s.webviewFrameWithText(/Stopped \(JVM timeline: rec\.jfr\)/, 30_000);
    await frame.locator('#notes', { hasText: /JFR records no run-queue waits/ }).waitFor({ timeout: 5000 });
    // select the whole recording: its range statistics name the collector, the samples and the waits
    await selectTimelineRange(s, frame);
    const [gcRow, cpuRow, offRow] = await Promise.all(['#range-gc', '#range-cpu', '#range-offcpu'].map((id) => frame.locator(id).innerText()));
    t.diagnostic(`range: ${gcRow} / ${cpuRow} / ${offRow}`);
    assert.match(gcRow, /G1 Young Generation ×\d+/);
    assert.match(cpuRow, /CPU samples\s+[1-9]\d*:/);
    assert.match(offRow, /Application threads: .*lock \(futex\) [\d.]+ s/);
    await s.screenshot('jfr-timeline', await s.webviewElement(frame));
    await s.runCommandFromPalette('View: Close All Editors');
  });

  await step(t, s, 'a truncated recording shows the byte offset where it stops', async () => {
    await open('cut.jfr');
    await s.webviewFrameWithText(/cut\.jfr[\s\S]*at byte \d+[\s\S]*truncated/, 30_000);
  });
});
