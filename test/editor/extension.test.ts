// The packaged extension in a real VS Code (code-server), driven through its UI: the command
// palette, the doctor report, and "Trace Java GC" against a JVM this test starts.
// Each step is a subtest on one shared editor session; later features add a step here.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { canvasColorPixels, EditorSession, repoRoot, skipReason } from './codeServer';
import { buildCFixture, codeLenses, cursorLine, editorOf, lineOf, openWorkspaceFile, problemRows, waitForCodeLens } from './editorDom';
import { kernelSkipReason } from '../helpers';
import { findJdks } from '../../extension/proc/processes';

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

const jdk = findJdks().find((j) => j.usdt && fs.existsSync(path.join(j.home, 'bin', 'javac')));
const javaGcSkip = !paletteTitle('ebpfStudio.traceJavaGc')
  ? 'the Java GC feature is not contributed (package.json has no ebpfStudio.traceJavaGc)'
  : (kernelSkipReason() ?? (jdk ? undefined : 'no JDK with hotspot USDT probes and javac found (apt-get install openjdk-17-jdk)'));

/**
 * test/fixtures/java/GcWorkload.java, compiled and started; it prints "ready pid=P …" and waits for a
 * line on stdin before it allocates, so the GCs come after the tracer attached.
 */
async function startGcWorkload(t: TestContext): Promise<{ child: ChildProcess; pid: number; go(): void; done: Promise<string> }> {
  const classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-gcworkload-'));
  t.after(() => fs.rmSync(classDir, { recursive: true, force: true }));
  const javac = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', classDir, path.join(repoRoot, 'test', 'fixtures', 'java', 'GcWorkload.java')], { encoding: 'utf8' });
  assert.equal(javac.status, 0, `javac failed: ${javac.stderr}`);
  // 2 full GCs and 512 MB of garbage in a 64 MB serial heap: a few dozen young GCs in about a second.
  const child = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+UseSerialGC', '-Xmx64m', '-cp', classDir, 'GcWorkload', '2', '512'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  const done = new Promise<string>((resolve) => child.on('exit', () => resolve(out)));
  const pid = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`GcWorkload printed no "ready" line in 20 s: ${out}`)), 20_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /ready pid=(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.on('exit', (code) => reject(new Error(`GcWorkload exited (${code}) before it was ready: ${out}`)));
  });
  return { child, pid, go: () => child.stdin!.write('go\n'), done };
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
    await s.waitForCommand('eBPF: Check This Machine (Doctor)');
    await s.openPalette('eBPF:');
    await s.quickPickRow('eBPF: Check This Machine (Doctor)').waitFor({ state: 'visible', timeout: 5000 });
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

  await step(
    t,
    s,
    'Trace Java GC: pick the test JVM, watch its GCs arrive in the panel',
    async () => {
      const jvm = await startGcWorkload(t);
      await s.runCommandFromPalette('eBPF: Trace Java GC');
      // The Quick Pick lists running JVMs as "<pid>  <main class>" once the helper answered.
      const row = s.quickPickRow(new RegExp(`\\b${jvm.pid}\\s+GcWorkload`));
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await s.screenshot('java-gc-quickpick');
      await row.click();

      const frame = await s.webviewFrame(`Java GC: pid ${jvm.pid}`);
      await frame.locator('#status').filter({ hasText: `Tracing pid ${jvm.pid}` }).waitFor({ timeout: 15_000 });
      const started = Date.now();
      jvm.go();
      // At least one GC counted and drawn within 15 s of the workload starting to allocate.
      await frame.locator('#card-count .value').filter({ hasText: /^[1-9]\d* \(/ }).waitFor({ timeout: 15_000 });
      const firstGcMs = Date.now() - started;
      const bars = await histogramBarPixels(s, `Java GC: pid ${jvm.pid}`);
      assert.ok(bars > 50, `the histogram shows no bars (${bars} bar-colored pixels below the legend)`);

      // Its GarbageCollectorMXBean counts must match what the panel counted once it exits.
      const done = await jvm.done;
      const m = /done young=(\d+) full=(\d+)/.exec(done);
      assert.ok(m, `GcWorkload did not finish: ${done}`);
      const status = frame.locator('#status').filter({ hasText: /Process exited/ });
      await status.waitFor({ timeout: 10_000 });
      const count = (await frame.locator('#card-count .value').innerText()).trim();
      assert.equal(count, `${Number(m[1]) + Number(m[2])} (${m[1]} / ${m[2]})`, 'the panel\'s GC count differs from the JVM\'s own');

      const png = await s.screenshot('java-gc-panel', await s.webviewElement(frame));
      const stats = await s.imageStats(png);
      assert.ok(stats.distinctColors > 20 && stats.nonBackground > 0.02, `the panel screenshot looks blank: ${JSON.stringify(stats)}`);
      t.diagnostic(`first GC shown ${firstGcMs} ms after the workload started; panel ${count}; screenshot ${stats.width}x${stats.height}, ${stats.distinctColors} colors, ${(stats.nonBackground * 100).toFixed(1)} % non-background`);
    },
    javaGcSkip,
  );

  await step(
    t,
    s,
    'Show Run Queue Latency: whole system in µs, histogram and heat map draw, Stop keeps the data',
    async () => {
      await s.runCommandFromPalette('eBPF: Show Run Queue Latency');
      await s.pickQuickPickItem('Whole system');
      await s.pickQuickPickItem('Microseconds');
      const frame = await s.webviewFrame('Run Queue Latency: whole system');
      // Every interval (1 s) brings the waits of the whole machine: a few seconds give columns.
      await frame.locator('#card-count .value').filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 15_000 });
      await s.page.waitForTimeout(3000);
      const bars = await histogramBarPixels(s, 'Run Queue Latency: whole system');
      assert.ok(bars > 50, `the histogram shows no bars (${bars} bar-colored pixels)`);
      const heat = await frame.evaluate(() => {
        const c = document.getElementById('heatmap') as HTMLCanvasElement;
        const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] > d[i + 2] + 40) n++; // orange-ish cells
        return n;
      });
      assert.ok(heat > 50, `the heat map shows no cells (${heat} warm pixels)`);
      await frame.locator('#stop').click();
      await frame.locator('#status').filter({ hasText: /Stopped/ }).waitFor({ timeout: 10_000 });
      const png = await s.screenshot('runqlat-panel', await s.webviewElement(frame));
      const stats = await s.imageStats(png);
      assert.ok(stats.distinctColors > 20 && stats.nonBackground > 0.02, `the panel screenshot looks blank: ${JSON.stringify(stats)}`);
    },
    !paletteTitle('ebpfStudio.showRunQueueLatency') ? 'package.json has no ebpfStudio.showRunQueueLatency' : kernelSkipReason(),
  );
});

/**
 * Pixels of the histogram canvas in the young/full (charts-blue/red) series colors, below the legend
 * (whose swatches use the same colors): > 0 only when a bar is drawn.
 */
async function histogramBarPixels(s: EditorSession, title: string): Promise<number> {
  const frame = await s.webviewFrame(title);
  return canvasColorPixels(frame, 'histogram', ['--vscode-charts-blue:#3794ff', '--vscode-charts-red:#f14c4c'], { skipTopPx: 20 });
}
