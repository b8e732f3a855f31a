// Extension-host integration tests in a desktop VS Code through @vscode/test-electron
// (test/integration/suite.ts runs inside it). Needs VSCODE_PATH pointing at an installed VS Code
// executable, or a reachable VS Code download (cached under $EBPF_STUDIO_CACHE/vscode-test), and a
// display (xvfb-run on CI). Skips with the reason otherwise: CI here has no internet, and the
// code-server tests (extension.test.ts) cover the real editor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './codeServer';

const cache = process.env.EBPF_STUDIO_CACHE ?? path.join(os.homedir(), '.cache', 'ebpf-studio');

async function downloadReachable(): Promise<boolean> {
  try {
    const res = await fetch('https://update.code.visualstudio.com/api/releases/stable', { signal: AbortSignal.timeout(3000) });
    return res.ok;
  } catch {
    return false;
  }
}

test('extension-host integration tests in desktop VS Code (@vscode/test-electron)', { timeout: 600_000 }, async (t) => {
  const given = process.env.VSCODE_PATH;
  if (given && !fs.existsSync(given)) {
    assert.fail(`VSCODE_PATH=${given} does not exist: point it at the VS Code executable (e.g. /usr/share/code/code) or unset it`);
  }
  if (!given && !(await downloadReachable())) {
    return t.skip('no VS Code: VSCODE_PATH is not set and update.code.visualstudio.com is unreachable (the code-server tests cover the editor)');
  }
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
    return t.skip('desktop VS Code needs a display: run under xvfb-run (DISPLAY is not set)');
  }
  if (!fs.existsSync(path.join(repoRoot, 'dist', 'extension.js'))) assert.fail('dist/extension.js is missing: run npm run build');

  const { runTests, downloadAndUnzipVSCode } = await import('@vscode/test-electron');
  const esbuild = await import('esbuild');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-electron-'));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const suite = path.join(tmp, 'suite.js');
  // The suite runs inside VS Code's own Node, which cannot load TypeScript: bundle it first.
  await esbuild.build({
    entryPoints: [path.join(repoRoot, 'test', 'integration', 'suite.ts')],
    outfile: suite,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    external: ['vscode'],
    logLevel: 'warning',
  });
  const vscodeExecutablePath = given ?? (await downloadAndUnzipVSCode({ cachePath: path.join(cache, 'vscode-test') }));
  const workspace = path.join(tmp, 'workspace');
  fs.mkdirSync(workspace);
  const code = await runTests({
    vscodeExecutablePath,
    extensionDevelopmentPath: repoRoot,
    extensionTestsPath: suite,
    // --no-sandbox: Chromium refuses to run as root with its sandbox, and CI runs as root.
    launchArgs: [workspace, '--no-sandbox', '--disable-gpu', '--disable-workspace-trust', '--disable-extensions',
      '--user-data-dir', path.join(tmp, 'user-data'), '--extensions-dir', path.join(tmp, 'extensions')],
  });
  assert.equal(code, 0, 'the integration suite failed: see the VS Code output above');
});
