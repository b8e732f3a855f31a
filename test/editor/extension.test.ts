// The packaged extension in a real VS Code (code-server), driven through its UI: the command
// palette, the doctor report, and "Trace Java GC" against a JVM this test starts.
// Each step is a subtest on one shared editor session; later features add a step here.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { EditorSession, repoRoot, skipReason } from './codeServer';

const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
const commands: { command: string; title: string; category?: string }[] = manifest.contributes?.commands ?? [];
const paletteTitle = (id: string) => {
  const c = commands.find((x) => x.command === id);
  return c && (c.category ? `${c.category}: ${c.title}` : c.title);
};

/** Runs one step; on failure keeps a screenshot and the editor's logs in test-artifacts/ for CI. */
async function step(t: TestContext, s: EditorSession, name: string, fn: () => Promise<void>, skip?: string): Promise<void> {
  await t.test(name, { skip }, async () => {
    try {
      await fn();
    } catch (e) {
      const slug = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
      await s.screenshot(`failed-${slug}`).catch(() => {});
      s.saveLogs(`failed-${slug}-logs`);
      throw e;
    }
  });
}

/** Text of the active text editor's visible lines (Monaco renders spaces as U+00A0). */
async function activeEditorText(s: EditorSession): Promise<string> {
  const lines = s.page.locator('.editor-group-container.active .monaco-editor .view-lines');
  await lines.first().waitFor({ state: 'visible', timeout: 15_000 });
  return (await lines.first().innerText()).replace(/\u00a0/g, ' ');
}

test('eBPF Studio in a real VS Code (code-server)', { skip: skipReason(), timeout: 300_000 }, async (t) => {
  const s = await EditorSession.start();
  t.after(() => s.close());

  await step(t, s, 'the command palette lists the eBPF commands', async () => {
    await s.openPalette('eBPF:');
    await s.quickPickRow('eBPF: Check This Machine (Doctor)').waitFor({ state: 'visible', timeout: 15_000 });
    const items = await s.quickPickItems();
    for (const id of ['ebpfStudio.doctor', 'ebpfStudio.traceJavaGc']) {
      const title = paletteTitle(id);
      if (!title) continue; // the Java GC feature checks its own presence in its step
      assert.ok(items.some((i) => i.startsWith(title)), `"${title}" not in the palette; it shows: ${items.join(' | ')}`);
    }
    await s.page.keyboard.press('Escape');
  });

  await step(t, s, 'Doctor reports this machine through the privileged helper', async () => {
    await s.runCommandFromPalette('eBPF: Check This Machine (Doctor)');
    // The first command activates the extension and starts the helper (root here: directly).
    const tab = s.page.locator('.tabs-container .tab', { hasText: 'Untitled' });
    await tab.first().waitFor({ state: 'visible', timeout: 30_000 });
    const text = await activeEditorText(s);
    assert.match(text, /# eBPF Studio: this machine/);
    assert.match(text, /\| kernel \| \S+/);
    if (process.geteuid?.() === 0) assert.match(text, /\| helper runs as root \| yes/);
    await s.screenshot('doctor');
    await s.runCommandFromPalette('View: Revert and Close Editor');
  });
});
