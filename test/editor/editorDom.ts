// What the editor shows in code-server, read from VS Code's DOM: open a workspace file from the
// Explorer, which line each CodeLens sits above, which line the cursor is on, the rows of the
// Problems panel. Monaco positions lines, lenses and line numbers absolutely, so "which line" is
// answered by geometry (a lens's view zone ends where its line begins).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Frame, Locator } from 'playwright-core';
import { repoRoot, type EditorSession } from './codeServer';

/**
 * Copies test/fixtures/c/<name>.c into the workspace and builds it there with gcc, so the DWARF
 * file names point at the copy the editor has open. Returns the source's and binary's paths.
 */
export function buildCFixture(s: EditorSession, name: string): { source: string; binary: string } {
  const source = path.join(s.workspace, `${name}.c`);
  fs.copyFileSync(path.join(repoRoot, 'test', 'fixtures', 'c', `${name}.c`), source);
  const r = spawnSync('gcc', ['-g', '-O0', '-fno-omit-frame-pointer', `${name}.c`, '-o', name], { cwd: s.workspace, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`gcc ${name}.c failed (exit ${r.status}): ${r.stderr}${r.error?.message ?? ''}`);
  return { source, binary: path.join(s.workspace, name) };
}

/** 1-based line of the first line of `file` containing `marker`. */
export function lineOf(file: string, marker: string | RegExp): number {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const i = lines.findIndex((l) => (typeof marker === 'string' ? l.includes(marker) : marker.test(l)));
  if (i < 0) throw new Error(`${marker} not found in ${file}`);
  return i + 1;
}

/** The text editor of the group whose active tab is `fileName` (focused or not). */
export function editorOf(s: EditorSession, fileName: string): Locator {
  return s.page
    .locator('.editor-group-container')
    .filter({ has: s.page.locator('.tabs-container .tab.active', { hasText: fileName }) })
    .locator('.monaco-editor')
    .first();
}

/**
 * Opens a file in the workspace's top folder by clicking it in the Explorer, as a user would.
 * (Quick Open caches its file list, so it misses files a step has just created.)
 */
export async function openWorkspaceFile(s: EditorSession, fileName: string): Promise<Locator> {
  const row = s.page
    .locator('.explorer-folders-view .monaco-list-row')
    .filter({ has: s.page.locator('.label-name', { hasText: new RegExp(`^${fileName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) })
    .first();
  if (!(await row.isVisible())) await s.runCommandFromPalette('View: Show Explorer');
  await row.waitFor({ state: 'visible', timeout: 15_000 });
  await row.click();
  const editor = editorOf(s, fileName);
  await editor.locator('.view-lines').waitFor({ state: 'visible', timeout: 15_000 });
  return editor;
}

/**
 * Double-clicks `folder/name` in the Explorer (which opens it in its default editor, ours for
 * profile and recording files). The Explorer is refreshed first: files a test wrote after the
 * window opened may not have reached it yet through a loaded machine's file watcher.
 */
export async function openInExplorer(s: EditorSession, folder: string, name: string): Promise<void> {
  const exact = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  await s.runCommandFromPalette('View: Show Explorer');
  // the title bar's actions show only under the pointer: the click is sent to the element itself
  await s.page.locator('.action-label[aria-label^="Refresh Explorer"]').first().dispatchEvent('click', undefined, { timeout: 10_000 });
  const dir = s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: exact(folder) }).first();
  await dir.waitFor({ state: 'visible', timeout: 15_000 });
  if ((await dir.getAttribute('aria-expanded')) !== 'true') await dir.click();
  const file = s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: exact(name) }).first();
  await file.waitFor({ state: 'visible', timeout: 15_000 });
  await file.dblclick();
}

/** The CodeLenses shown in `editor`: each lens's text and the 1-based line it sits above. */
export async function codeLenses(editor: Locator): Promise<{ line: number; text: string }[]> {
  // Plain loops, no named inner functions: tsx's keepNames would reference its __name helper,
  // which does not exist in the page.
  return editor.evaluate((root) => {
    const numbers: { top: number; line: number }[] = [];
    for (const n of Array.from(root.querySelectorAll('.margin-view-overlays .line-numbers'))) {
      const line = Number((n.textContent ?? '').trim());
      if (line > 0) numbers.push({ top: n.getBoundingClientRect().top, line });
    }
    const out: { line: number; text: string }[] = [];
    for (const lens of Array.from(root.querySelectorAll('.codelens-decoration'))) {
      const bottom = lens.getBoundingClientRect().bottom;
      let best: { top: number; line: number } | undefined;
      for (const n of numbers) if (n.top >= bottom - 2 && (!best || n.top < best.top)) best = n;
      out.push({ line: best ? best.line : -1, text: (lens.textContent ?? '').replace(/\u00a0/g, ' ').trim() });
    }
    return out;
  });
}

/**
 * Polls the CodeLenses of `editor` until `done(lenses)` holds (lenses render one by one, a moment
 * after the provider fires) or the time is up; returns the last lenses seen either way.
 */
export async function waitForCodeLenses(editor: Locator, done: (lenses: { line: number; text: string }[]) => boolean, timeoutMs = 15_000): Promise<{ line: number; text: string }[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lenses = await codeLenses(editor);
    if (done(lenses) || Date.now() > deadline) return lenses;
    await editor.page().waitForTimeout(250);
  }
}

/** 1-based line of the cursor in `editor` (its highlighted line number), or -1. */
export async function cursorLine(editor: Locator): Promise<number> {
  const active = editor.locator('.margin-view-overlays .line-numbers.active-line-number');
  if ((await active.count()) === 0) return -1;
  return Number((await active.first().innerText()).trim());
}

/**
 * The cursor line of `fileName`'s editor once a click has opened it: waits up to 10 s for the
 * cursor to reach `line` (the reveal lands after the editor shows) and returns where it is.
 */
export async function cursorLineAfterOpen(s: EditorSession, fileName: string, line: number): Promise<number> {
  const editor = editorOf(s, fileName);
  await editor.locator('.view-lines').waitFor({ state: 'visible', timeout: 15_000 });
  const deadline = Date.now() + 10_000;
  let cursor = await cursorLine(editor);
  while (cursor !== line && Date.now() < deadline) {
    await s.page.waitForTimeout(200);
    cursor = await cursorLine(editor);
  }
  return cursor;
}

/** Rows of the Problems panel as their accessible labels ("Error: … at line 8 column 10 …"). */
export async function problemRows(s: EditorSession): Promise<string[]> {
  const rows = s.page.locator('.markers-panel .monaco-list-row');
  return rows.evaluateAll((els) => els.map((e) => `${e.getAttribute('aria-label') ?? ''} | ${(e.textContent ?? '').replace(/\u00a0/g, ' ')}`));
}

/** Drags across a JVM timeline's lanes (right of their 150 px labels) and waits for the selected range's statistics. */
export async function selectTimelineRange(s: EditorSession, frame: Frame): Promise<void> {
  const box = (await frame.locator('#lanes').boundingBox())!;
  await s.page.mouse.move(box.x + 160, box.y + box.height / 2);
  await s.page.mouse.down();
  await s.page.mouse.move(box.x + box.width - 5, box.y + box.height / 2, { steps: 8 });
  await s.page.mouse.up();
  await frame.locator('#range-title').filter({ hasText: /^Selected range/ }).waitFor({ timeout: 10_000 });
}
