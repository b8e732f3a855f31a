import fs from 'node:fs';
import { EditorSession } from '../codeServer';
import { openWorkspaceFile } from '../editorDom';
(async () => {
  const s = await EditorSession.start({ files: { 'broken.bpf.c': fs.readFileSync('/tmp/broken.bpf.c', 'utf8') } });
  try {
    await openWorkspaceFile(s, 'broken.bpf.c');
    await s.runCommandFromPalette('Tasks: Run Task');
    const rows = s.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    await rows.filter({ has: s.page.locator('.label-name', { hasText: /^\s*ebpf\s*$/ }) }).first().click();
    await s.page.waitForTimeout(2000);
    console.log(await rows.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') + ' :: ' + e.textContent).join('\n')));
    await rows.first().click();
    await s.page.waitForTimeout(5000);
    await s.screenshot('scratch-after-task');
    await s.openPalette('Problems');
    await s.page.waitForTimeout(1000);
    console.log(await s.quickPickItems());
    await s.page.keyboard.press('Escape');
    await s.runCommandFromPalette('View: Focus on Problems View');
    await s.page.waitForTimeout(2000);
    console.log(await s.page.locator('.markers-panel .monaco-list-row').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') + ' :: ' + e.textContent).join('\n')));
    await s.screenshot('scratch-problems');
  } finally {
    await s.close();
  }
})();
