// Editor step: Find Memory Leaks on a running JVM (test/fixtures/java/HeapSites.java, its source
// in the workspace) traces Java heap leaks: a CodeLens with the live bytes, the class, the GCs
// survived and the growth sits on the line that leaks into a static list, and on no churn line.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EditorSession } from './codeServer';
import { lineOf, openWorkspaceFile, waitForCodeLenses } from './editorDom';
import { repoRoot } from '../helpers';

export async function javaHeapLeaksStep(t: TestContext, s: EditorSession, jdk: string): Promise<void> {
  const source = path.join(s.workspace, 'HeapSites.java');
  fs.copyFileSync(path.join(repoRoot, 'test', 'fixtures', 'java', 'HeapSites.java'), source);
  const classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-heapsites-'));
  t.after(() => fs.rmSync(classDir, { recursive: true, force: true }));
  const javac = spawnSync(path.join(jdk, 'bin', 'javac'), ['-d', classDir, source], { encoding: 'utf8' });
  assert.equal(javac.status, 0, `javac failed: ${javac.stderr}`);
  // churn at 100 MB/s, a leak of 640 × 16 KiB per second once told to start
  const jvm = spawn(path.join(jdk, 'bin', 'java'), ['-Xmx384m', '-cp', classDir, 'HeapSites', '1', '100000000', '640'], { cwd: classDir, stdio: ['pipe', 'pipe', 'ignore'] });
  t.after(() => jvm.kill('SIGKILL'));
  let out = '';
  jvm.stdout!.on('data', (d) => (out += d));
  const deadline = Date.now() + 30_000;
  while (!/ready/.test(out) && Date.now() < deadline) await s.page.waitForTimeout(100);
  assert.match(out, /ready/, 'the fixture JVM started');
  const pid = jvm.pid!;
  jvm.stdin!.write('start\n');

  await s.runCommandFromPalette('eBPF: Find Memory Leaks');
  const input = s.page.locator('.quick-input-widget .quick-input-box input');
  await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Find Memory Leaks' }).waitFor({ timeout: 30_000 });
  await input.fill(String(pid));
  // the JVM row of the process picker: pid, then its main class
  await s.pickQuickPickItem(new RegExp(`\\b${pid}\\s+HeapSites`));
  try {
    await checkLenses(t, s, source);
    jvm.kill('SIGKILL'); // the session ends with the JVM
    await s.page.locator('.notifications-toasts .notification-list-item-message', { hasText: /Java heap tracing/ }).first().waitFor({ timeout: 30_000 });
  } finally {
    jvm.kill('SIGKILL');
    await s.page.keyboard.press('Escape');
    await s.runCommandFromPalette('View: Close All Editors');
  }
}

async function checkLenses(t: TestContext, s: EditorSession, source: string): Promise<void> {
  // The leak view opens with the session: wait for it, then bring the focus back to the workbench.
  await s.webviewFrame('Java Heap Leaks');
  await s.page.keyboard.press('Escape');
  await s.page.locator('.monaco-workbench').first().click({ position: { x: 5, y: 5 } });
  const editor = await openWorkspaceFile(s, 'HeapSites.java');
  const leakLine = lineOf(source, '// site L');
  const churn = [lineOf(source, '// site A'), lineOf(source, '// site B'), lineOf(source, '// site C')];
  const live = (all: { line: number; text: string }[]) => all.filter((l) => /live in/.test(l.text));
  const lenses = await waitForCodeLenses(editor, (all) => live(all).some((l) => l.line === leakLine && /^⚠ ≈ .* live in .* long\[\] · survived \d+ GCs · \+/.test(l.text)), 40_000);
  const lens = lenses.find((l) => l.line === leakLine);
  assert.ok(lens, `no CodeLens on HeapSites.java:${leakLine}; lenses: ${JSON.stringify(lenses)}`);
  assert.match(lens.text, /^⚠ ≈ [\d.]+ MB live in [\d.]+ k? ?long\[\] · survived \d+ GCs · \+[\d.]+ [KM]B\/s$/, `the leak lens says "${lens.text}"`);
  for (const l of live(lenses)) if (churn.includes(l.line)) assert.doesNotMatch(l.text, /^⚠/, `a churn line is marked as a leak: ${JSON.stringify(l)}`);
  await s.screenshot('java-heap-codelens');
  t.diagnostic(`lenses ${live(lenses).map((l) => `${l.line}: ${l.text}`).join(' | ')}`);
}
