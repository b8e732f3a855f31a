// Our walkthrough opens on the first activation only (remembered in globalState), and not when the
// user turned it (or VS Code's walkthroughs-on-install) off (with the `vscode` mock recording commands).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installVscodeMock, recorded } from '../mocks/vscode';

installVscodeMock();

const { openWalkthroughOnce, SHOWN_KEY } = require('../../extension/editor/features/welcome') as typeof import('../../extension/editor/features/welcome');

function context() {
  const state = new Map<string, unknown>();
  return { state, ctx: { extension: { id: 'ebpf-studio.ebpf-studio' }, globalState: { get: (k: string) => state.get(k), update: async (k: string, v: unknown) => void state.set(k, v), keys: () => [...state.keys()] } } as never };
}

test('the walkthrough opens on the first activation, then never again', async () => {
  const opened: unknown[][] = [];
  recorded.commands.set('workbench.action.openWalkthrough', (...a: unknown[]) => opened.push(a));
  const { state, ctx } = context();
  assert.equal(await openWalkthroughOnce(ctx), true);
  assert.deepEqual(opened, [['ebpf-studio.ebpf-studio#ebpfStudio.getStarted', false]]);
  assert.equal(state.get(SHOWN_KEY), true);
  assert.equal(await openWalkthroughOnce(ctx), false, 'a reload does not open it again');
  assert.equal(opened.length, 1);
});

for (const setting of ['ebpfStudio.openWalkthroughOnFirstRun', 'workbench.welcomePage.walkthroughs.openOnInstall']) {
  test(`${setting} = false: not opened, and remembered`, async () => {
    const opened: unknown[][] = [];
    recorded.commands.set('workbench.action.openWalkthrough', (...a: unknown[]) => opened.push(a));
    recorded.config.set(setting, false);
    try {
      const { state, ctx } = context();
      assert.equal(await openWalkthroughOnce(ctx), false);
      assert.equal(opened.length, 0);
      assert.equal(state.get(SHOWN_KEY), true);
    } finally {
      recorded.config.delete(setting);
    }
  });
}
