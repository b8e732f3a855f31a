// Editor-tier harness: the packaged .vsix installed into a real VS Code (code-server from npm,
// scripts/install-code-server.sh) and driven through its UI by playwright-core with Debian's Chromium.
// Each test file: `const s = await EditorSession.start()` → s.runCommandFromPalette(...) … → s.close()
// (in t.after / finally). Helpers are exported so later features add their steps in a few lines.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Frame, type Locator, type Page } from 'playwright-core';
import { repoRoot } from '../helpers';

export { repoRoot };

/** Keep in sync with VERSION in scripts/install-code-server.sh. */
export const CODE_SERVER_VERSION = '4.100.3';
export const artifactsDir = path.join(repoRoot, 'test-artifacts');
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function codeServerBin(): string | undefined {
  if (process.env.CODE_SERVER_PATH) return process.env.CODE_SERVER_PATH;
  const cache = process.env.EBPF_STUDIO_CACHE ?? path.join(os.homedir(), '.cache', 'ebpf-studio');
  const dir = path.join(cache, `code-server-${CODE_SERVER_VERSION}`);
  const bin = path.join(dir, 'node_modules', '.bin', 'code-server');
  return fs.existsSync(path.join(dir, '.install-complete')) && fs.existsSync(bin) ? bin : undefined;
}

/** Why the editor tier cannot run here, or undefined. In CI .ci/run installs code-server first, so it runs. */
export function skipReason(): string | undefined {
  if (!codeServerBin()) return 'code-server not installed: run scripts/install-code-server.sh';
  if (!fs.existsSync(chromiumPath)) return `Chromium not found at ${chromiumPath}: apt-get install chromium (or set CHROMIUM_PATH)`;
  return undefined;
}

let packaged: string | undefined;
/**
 * The .vsix under test: EBPF_STUDIO_VSIX if set, else `scripts/package.mjs --no-build` into a temp dir:
 * what `npm run build` made, like the kernel tier uses dist/ as built. Packaged once per test process.
 */
export function packageVsix(): string {
  if (process.env.EBPF_STUDIO_VSIX) return path.resolve(process.env.EBPF_STUDIO_VSIX);
  if (packaged) return packaged;
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-vsix-')), 'ebpf-studio.vsix');
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'package.mjs'), '--out', out, '--no-build'], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`scripts/package.mjs failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  packaged = out;
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url: string, child: ChildProcess, log: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited with ${child.exitCode} before listening:\n${log()}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server did not answer ${url} within ${timeoutMs / 1000} s:\n${log()}`);
}

/** Settings for a quiet, deterministic workbench: no trust prompt, no welcome page, no network. */
const baseSettings: Record<string, unknown> = {
  'security.workspace.trust.enabled': false,
  'workbench.startupEditor': 'none',
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  // code-server does not pass the setting above to the extension host: our own switch for our walkthrough
  'ebpfStudio.openWalkthroughOnFirstRun': false,
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  // the sticky header lines overlay the editor's first lines and swallow clicks meant for them
  'editor.stickyScroll.enabled': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'git.enabled': false,
  'window.commandCenter': false,
};

export interface StartOptions {
  /** extra user settings (settings.json) */
  settings?: Record<string, unknown>;
  /** files to create in the workspace folder, path → contents */
  files?: Record<string, string>;
  /** a .vsix to install instead of packaging the repo */
  vsix?: string;
  /** run code-server (and so the extension host) as this user instead of the test's; its tmp folder is chowned to it */
  runAs?: { uid: number; gid: number; home: string };
  /** environment variables to drop from code-server's environment (e.g. DISPLAY for a headless session) */
  dropEnv?: string[];
}

export class EditorSession {
  private constructor(
    readonly page: Page,
    private readonly browser: Browser,
    private readonly server: ChildProcess,
    readonly tmp: string,
    readonly workspace: string,
    readonly url: string,
    private readonly serverLog: string[],
  ) {}

  static async start(opts: StartOptions = {}): Promise<EditorSession> {
    const bin = codeServerBin();
    if (!bin) throw new Error('code-server not installed: run scripts/install-code-server.sh');
    const vsix = opts.vsix ?? packageVsix();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-editor-'));
    try {
      return await EditorSession.startIn(tmp, bin, vsix, opts);
    } catch (e) {
      fs.rmSync(tmp, { recursive: true, force: true });
      throw e;
    }
  }

  private static async startIn(tmp: string, bin: string, vsix: string, opts: StartOptions): Promise<EditorSession> {
    const userData = path.join(tmp, 'user-data');
    const extensions = path.join(tmp, 'extensions');
    const workspace = path.join(tmp, 'workspace');
    fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
    fs.mkdirSync(workspace, { recursive: true });
    fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({ ...baseSettings, ...opts.settings }, null, 2));
    for (const [rel, text] of Object.entries(opts.files ?? {})) {
      fs.mkdirSync(path.dirname(path.join(workspace, rel)), { recursive: true });
      fs.writeFileSync(path.join(workspace, rel), text);
    }
    // code-server keeps its own config and state under XDG dirs: point them into tmp so the test
    // neither reads nor writes the user's ~/.config/code-server.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...(opts.runAs ? { HOME: opts.runAs.home } : {}),
      XDG_CONFIG_HOME: path.join(tmp, 'xdg-config'),
      XDG_DATA_HOME: path.join(tmp, 'xdg-data'),
      XDG_CACHE_HOME: path.join(tmp, 'xdg-cache'),
    };
    const common = ['--config', path.join(tmp, 'config.yaml'), '--user-data-dir', userData, '--extensions-dir', extensions];
    fs.writeFileSync(path.join(tmp, 'config.yaml'), 'auth: none\n');
    for (const k of opts.dropEnv ?? []) delete env[k];
    const as = opts.runAs ? { uid: opts.runAs.uid, gid: opts.runAs.gid } : {};
    if (opts.runAs) {
      fs.chmodSync(tmp, 0o755);
      spawnSync('chown', ['-R', `${opts.runAs.uid}:${opts.runAs.gid}`, tmp]);
      fs.chmodSync(vsix, 0o644);
      fs.chmodSync(path.dirname(vsix), 0o755);
    }

    const inst = spawnSync(bin, [...common, '--install-extension', vsix, '--force'], { env, encoding: 'utf8', timeout: 120_000, ...as });
    const instOut = `${inst.stdout}${inst.stderr}`;
    if (inst.status !== 0 || !/successfully installed/i.test(instOut)) {
      throw new Error(`code-server --install-extension ${vsix} failed (exit ${inst.status}):\n${instOut}`);
    }

    const port = await freePort();
    const serverLog: string[] = [];
    // detached: its own process group, so close() can end code-server, the extension host and the
    // helper it started in one signal.
    const server = spawn(
      bin,
      [...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check',
        '--disable-workspace-trust', '--disable-getting-started-override', workspace],
      { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...as },
    );
    const keep = (b: Buffer) => {
      serverLog.push(b.toString());
      if (serverLog.length > 500) serverLog.shift();
    };
    server.stdout!.on('data', keep);
    server.stderr!.on('data', keep);
    liveServers.add(server);
    const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;

    let browser: Browser | undefined;
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, server, () => serverLog.join(''), 30_000);
      browser = await chromium.launch({
        executablePath: chromiumPath,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync',
          '--no-first-run', '--disable-quic'],
      });
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const session = new EditorSession(page, browser, server, tmp, workspace, url, serverLog);
      await page.goto(url);
      await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
      await session.dismissStartupEditors();
      return session;
    } catch (e) {
      await browser?.close().catch(() => {});
      killGroup(server);
      throw e;
    }
  }

  /** The first load may still open a walkthrough/welcome tab despite the settings: close every editor. */
  async dismissStartupEditors(): Promise<void> {
    // The workbench restores editors a moment after it appears; let it settle before closing them.
    await this.page.locator('.part.editor').waitFor({ state: 'visible', timeout: 30_000 });
    await this.page.waitForTimeout(1000);
    const tabs = this.page.locator('.tabs-container .tab');
    if ((await tabs.count()) > 0) await this.runCommandFromPalette('View: Close All Editors');
  }

  /** Opens the command palette with `text` typed (">" mode). */
  async openPalette(text = ''): Promise<void> {
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    // The palette can close again right after opening (a command still finishing, focus moving
    // out of a webview): reopen it rather than wait on a hidden input.
    for (let attempt = 1; ; attempt++) {
      await this.page.keyboard.press('Escape');
      await this.page.keyboard.press('F1');
      try {
        await input.waitFor({ state: 'visible', timeout: 10_000 });
        await input.fill(`>${text}`, { timeout: 5000 });
        return;
      } catch (e) {
        if (attempt >= 3) throw e;
      }
    }
  }

  /** Visible rows of the open Quick Pick / command palette, as their accessible labels. */
  async quickPickItems(): Promise<string[]> {
    const rows = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    await rows.first().waitFor({ state: 'visible', timeout: 10_000 });
    return rows.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? e.textContent ?? ''));
  }

  /** Waits until a Quick Pick row whose label contains `text` is shown and returns it. */
  quickPickRow(text: string | RegExp): Locator {
    return this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: text }).first();
  }

  async pickQuickPickItem(text: string | RegExp, timeoutMs = 15_000): Promise<void> {
    const row = this.quickPickRow(text);
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
  }

  /**
   * Opens the palette filtered to `title` and waits for that exact command. Right after the workbench
   * appears the extension host may still be scanning extensions, so retype until it shows up.
   */
  async waitForCommand(title: string, timeoutMs = 30_000): Promise<Locator> {
    const row = this.page
      .locator('.quick-input-widget .quick-input-list .monaco-list-row')
      .filter({ has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(title)}$`) }) })
      .first();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.openPalette(title);
      try {
        await row.waitFor({ state: 'visible', timeout: 2000 });
        return row;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`command "${title}" not in the palette after ${timeoutMs / 1000} s`, { cause: e });
      }
    }
  }

  /**
   * "Developer: Reload Window", returning once the new workbench is up. The old workbench stays
   * visible until the page navigates, so waiting for it alone raced the reload (CI saw a lookup
   * in the page being torn down).
   */
  async reloadWindow(): Promise<void> {
    const navigated = this.page.waitForEvent('framenavigated', { predicate: (f) => f === this.page.mainFrame(), timeout: 60_000 });
    await this.runCommandFromPalette('Developer: Reload Window');
    await navigated;
    await this.page.waitForLoadState('domcontentloaded', { timeout: 60_000 });
    await this.page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
  }

  /** Runs a command by its palette title (e.g. "eBPF: Trace Java GC"). */
  async runCommandFromPalette(title: string): Promise<void> {
    await (await this.waitForCommand(title)).click();
  }

  /**
   * Runs a palette command and picks `item` in the Quick Pick it opens. A webview that takes the
   * focus back right after the palette closed (one clicked in the step before) hides that Quick
   * Pick with its row still in the page; then the command is run once more.
   */
  async runCommandAndPick(title: string, item: string | RegExp): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      await this.runCommandFromPalette(title);
      const row = this.quickPickRow(item);
      try {
        await row.waitFor({ state: 'visible', timeout: 15_000 });
        await row.click({ timeout: 5_000 });
        return;
      } catch (e) {
        if (attempt >= 1) throw e;
        await this.page.keyboard.press('Escape');
      }
    }
  }

  /**
   * The document frame of the webview whose <title> is `title` (extension/editor/ui/webviewPanel.ts sets it).
   * VS Code nests each webview: iframe.webview → iframe#active-frame (our HTML).
   */
  async webviewFrame(title: string, timeoutMs = 20_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      // The page itself may be navigating (a reload): look again next round.
      const outers = await this.page.locator('iframe.webview').elementHandles().catch(() => []);
      for (const outer of outers) {
        // A webview that is still loading navigates its frames under us: look again next round.
        const frame = await (async () => {
          const outerFrame = await outer.contentFrame();
          const inner = await outerFrame?.$('iframe#active-frame');
          return inner?.contentFrame();
        })().catch(() => null);
        const docTitle = await frame?.evaluate(() => document.title).catch(() => undefined);
        if (frame && docTitle === title) return frame;
      }
      await this.page.waitForTimeout(250);
    }
    throw new Error(`no webview titled "${title}" appeared within ${timeoutMs / 1000} s`);
  }

  /** The document frame of a webview (ours or VS Code's, e.g. a Markdown preview) whose text matches `re`. */
  async webviewFrameWithText(re: RegExp, timeoutMs = 20_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (const outer of await this.page.locator('iframe.webview').elementHandles().catch(() => [])) {
        const frame = await (async () => (await (await outer.contentFrame())?.$('iframe#active-frame'))?.contentFrame())().catch(() => null);
        const text = await frame?.evaluate(() => document.body?.innerText ?? '').catch(() => undefined);
        if (frame && text && re.test(text)) return frame;
      }
      await this.page.waitForTimeout(250);
    }
    throw new Error(`no webview showing ${re} appeared within ${timeoutMs / 1000} s`);
  }

  /** The visible webview element (the outer iframe) whose document is `frame`, for screenshots. */
  async webviewElement(frame: Frame): Promise<Locator> {
    const outer = frame.parentFrame();
    const handles = await this.page.locator('iframe.webview').elementHandles();
    for (let i = 0; i < handles.length; i++) if ((await handles[i].contentFrame()) === outer) return this.page.locator('iframe.webview').nth(i);
    throw new Error('the webview frame is no longer attached');
  }

  /** Text of the notification toasts currently shown (errors from showError land here). */
  async notifications(): Promise<string[]> {
    return this.page.locator('.notifications-toasts .notification-list-item-message').allTextContents();
  }

  /** Saves test-artifacts/<name>.png (of `target`, else the whole page) and returns the PNG bytes. */
  async screenshot(name: string, target?: Locator): Promise<Buffer> {
    fs.mkdirSync(artifactsDir, { recursive: true });
    const file = path.join(artifactsDir, `${name}.png`);
    return target ? target.screenshot({ path: file }) : this.page.screenshot({ path: file });
  }

  /**
   * How much a PNG shows: distinct colors and the share of pixels that differ from the most common
   * (background) color. Decoded by the browser (a canvas in a blank page) rather than a PNG decoder
   * written here.
   */
  async imageStats(png: Buffer): Promise<{ width: number; height: number; distinctColors: number; nonBackground: number }> {
    const page = await this.browser.newPage();
    try {
      return await page.evaluate(async (b64) => {
        const img = new Image();
        img.src = `data:image/png;base64,${b64}`;
        await img.decode();
        const c = document.createElement('canvas');
        c.width = img.naturalWidth;
        c.height = img.naturalHeight;
        const ctx = c.getContext('2d')!;
        ctx.drawImage(img, 0, 0);
        const px = new Uint32Array(ctx.getImageData(0, 0, c.width, c.height).data.buffer);
        const counts = new Map<number, number>();
        for (const p of px) counts.set(p, (counts.get(p) ?? 0) + 1);
        const background = Math.max(...counts.values());
        return { width: c.width, height: c.height, distinctColors: counts.size, nonBackground: 1 - background / px.length };
      }, png.toString('base64'));
    } finally {
      await page.close();
    }
  }

  /** Copies code-server's logs (extension host, "eBPF Studio" output channel) to test-artifacts/<name>/. */
  saveLogs(name: string): string {
    const dest = path.join(artifactsDir, name);
    fs.rmSync(dest, { recursive: true, force: true });
    fs.mkdirSync(dest, { recursive: true });
    const logs = path.join(this.tmp, 'user-data', 'logs');
    if (fs.existsSync(logs)) fs.cpSync(logs, path.join(dest, 'logs'), { recursive: true });
    fs.writeFileSync(path.join(dest, 'code-server.log'), this.serverLog.join(''));
    return dest;
  }

  /** The "eBPF Studio" output channel as logged to disk so far. */
  outputChannel(): string {
    const logs = path.join(this.tmp, 'user-data', 'logs');
    const found: string[] = [];
    const walk = (d: string) => {
      if (!fs.existsSync(d)) return;
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('eBPF Studio.log')) found.push(fs.readFileSync(p, 'utf8'));
      }
    };
    walk(logs);
    return found.join('\n');
  }

  /** Always call (t.after): ends Chromium, code-server and everything code-server started. */
  async close(): Promise<void> {
    await this.browser.close().catch(() => {});
    await stopServer(this.server);
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

/**
 * Counts the pixels of canvas#`canvasId` (in a webview frame) drawn in any of `colors`, each a CSS
 * color or "--vscode-var:fallback". skipTopPx (CSS px) leaves out a legend strip whose swatches use
 * the series colors. Charts are canvases, so "a bar is drawn" is a question about pixels.
 */
export async function canvasColorPixels(frame: Frame, canvasId: string, colors: string[], opts: { skipTopPx?: number; tolerance?: number } = {}): Promise<number> {
  // Plain loops, no named inner functions: tsx's keepNames would reference its __name helper, which
  // does not exist in the page.
  return frame.evaluate(
    ({ canvasId, colors, skipTopPx, tolerance }) => {
      const canvas = document.getElementById(canvasId) as HTMLCanvasElement | null;
      if (!canvas) throw new Error(`no canvas#${canvasId} in the webview`);
      const probe = document.createElement('canvas').getContext('2d')!;
      const style = getComputedStyle(document.body);
      const rgbs: number[][] = [];
      for (const spec of colors) {
        const m = /^(--[\w-]+):(.*)$/.exec(spec);
        probe.clearRect(0, 0, 1, 1);
        probe.fillStyle = m ? style.getPropertyValue(m[1]).trim() || m[2] : spec;
        probe.fillRect(0, 0, 1, 1);
        rgbs.push(Array.from(probe.getImageData(0, 0, 1, 1).data.slice(0, 3)));
      }
      const top = Math.ceil(skipTopPx * (canvas.height / Math.max(1, canvas.clientHeight)));
      if (canvas.width === 0 || canvas.height <= top) return 0;
      const data = canvas.getContext('2d')!.getImageData(0, top, canvas.width, canvas.height - top).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] === 0) continue;
        for (const c of rgbs) {
          if (Math.abs(c[0] - data[i]) <= tolerance && Math.abs(c[1] - data[i + 1]) <= tolerance && Math.abs(c[2] - data[i + 2]) <= tolerance) {
            n++;
            break;
          }
        }
      }
      return n;
    },
    { canvasId, colors, skipTopPx: opts.skipTopPx ?? 0, tolerance: opts.tolerance ?? 8 },
  );
}

const liveServers = new Set<ChildProcess>();

function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  // Signal the group even when code-server itself has exited: its extension host and helper may not have.
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    /* the whole group is gone */
  }
  if (signal === 'SIGKILL') liveServers.delete(child);
}

async function stopServer(child: ChildProcess): Promise<void> {
  // SIGTERM first so the extension host deactivates and the helper detaches its BPF programs.
  killGroup(child, 'SIGTERM');
  const exited = new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  killGroup(child, 'SIGKILL');
}

// A test that dies half-way (timeout, uncaught error) must not leave code-server running.
process.on('exit', () => {
  for (const s of liveServers) killGroup(s);
  if (packaged) fs.rmSync(path.dirname(packaged), { recursive: true, force: true });
});

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
