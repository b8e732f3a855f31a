// The packaged extension in a real VS Code (code-server), driven through its UI: the command
// palette, the doctor report, "Trace Java GC" against a JVM this test starts, run-queue latency,
// leak CodeLenses after "Run with Leak Tracing", the flame graph's click-through to source, and
// the BPF build task's error in Problems (C fixtures are built into the workspace).
// Each step is a subtest on one shared editor session; later features add a step here.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator } from 'playwright-core';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { canvasColorPixels, type EditorSession, repoRoot, skipReason } from './codeServer';
import { buildCFixture, cursorLineAfterOpen, lineOf, openWorkspaceFile, problemRows, selectTimelineRange, waitForCodeLenses } from './editorDom';
import { kernelSkipReason } from '../helpers';
import { buildUnwindFixture } from '../peers/unwindFixture';
import { findJdks } from '../../extension/sys/proc/processes';
import { formatCount } from '../../extension/model/units';
import { findTool } from '../../extension/authoring/toolchain';
import { compareProfilesStep } from './profileDiffStep';
import { sessionsRestoreStep } from './sessionsRestoreStep';
import { javaHeapLeaksStep } from './javaHeapLeaksStep';
import { gcLiveStep } from './gcLiveStep';
import { startSession, step } from './steps';

const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
const commands: { command: string; title: string; category?: string }[] = manifest.contributes?.commands ?? [];
const paletteTitle = (id: string) => {
  const c = commands.find((x) => x.command === id);
  return c && (c.category ? `${c.category}: ${c.title}` : c.title);
};

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

/**
 * After the target pick Profile CPU starts at once (99 Hz, until Stop): the options stay in the
 * target list as "Sampling: … change…", never a question before the run.
 */
async function answerSampling(s: EditorSession): Promise<void> {
  const asked = s.page.locator('.quick-input-widget .quick-input-title', { hasText: /samples per second|for how long/ });
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    assert.equal(await asked.isVisible().catch(() => false), false, 'Profile CPU asked for sampling options before it started');
    if (await s.page.locator('iframe.webview').count()) return;
    await s.page.waitForTimeout(100);
  }
}

/** "eBPF: Profile CPU" on one process at the default frequency, until Stop pressed after 3 s. */
async function profileFromPalette(s: EditorSession, pid: number, comm: string) {
  await s.runCommandFromPalette('eBPF: Profile CPU');
  const input = s.page.locator('.quick-input-widget .quick-input-box input');
  // The list holds every process and renders only what fits: filter it to the workload.
  await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
  await input.fill(String(pid));
  // the sampling options sit in the same list, one click away, instead of questions after it
  await s.quickPickRow(/Sampling: \d+ Hz, (until Stop|\d+ s)/).waitFor({ state: 'visible', timeout: 5000 });
  await s.pickQuickPickItem(new RegExp(`\\b${pid}\\s+${comm}`));
  await answerSampling(s);
  const frame = await s.webviewFrame(`CPU: pid ${pid} (${comm})`);
  const status = frame.locator('.toolbar > .status').last();
  await status.filter({ hasText: /Sampling… [1-9][\d,]* samples/ }).waitFor({ timeout: 15_000 });
  await s.page.waitForTimeout(3000);
  await frame.locator('button', { hasText: /^Stop$/ }).click();
  await status.filter({ hasText: /samples at \d+ Hz/ }).waitFor({ timeout: 15_000 });
  return { frame, status };
}
// The Java-agent profile step needs a JDK with javac and the built agent.
const agentJdk = ['/usr/lib/jvm/java-17-openjdk-amd64'].find((h) => fs.existsSync(path.join(h, 'bin', 'javac')));
const agentSkip = !agentJdk ? 'no JDK 17 with javac (apt-get install openjdk-17-jdk-headless)' : !fs.existsSync(path.join(repoRoot, 'dist', 'libebpf-studio-jvmagent.so')) ? 'the JVM agent is not built (npm run build with a JDK)' : undefined;

test('eBPF Studio in a real VS Code (code-server)', { skip: skipReason(), timeout: 900_000 }, async (t) => {
  const s = await startSession(t);

  await step(t, s, 'the command palette lists the eBPF commands', async () => {
    await s.waitForCommand('eBPF: Check This Machine (Doctor)');
    // The palette renders only the rows that fit: look each command up by its title.
    for (const id of ['ebpfStudio.doctor', 'ebpfStudio.traceJavaGc', 'ebpfStudio.profileCpu', 'ebpfStudio.findMemoryLeaks', 'ebpfStudio.showRunQueueLatency']) {
      const title = paletteTitle(id);
      if (!title) continue; // a feature not contributed checks its own presence in its step
      await s.waitForCommand(title, 10_000);
    }
    await s.page.keyboard.press('Escape');
  });

  await step(t, s, 'Doctor reports this machine through the privileged helper', async () => {
    await s.runCommandFromPalette('eBPF: Check This Machine (Doctor)');
    // The first command activates the extension and starts the helper (root here: directly). The
    // report is a rendered, read-only preview: no untitled buffer that asks to be saved.
    const frame = await s.webviewFrameWithText(/eBPF Studio: this machine/, 45_000);
    const text = await frame.evaluate(() => document.body.innerText);
    assert.match(text, /kernel: \S+/);
    assert.match(text, /root-owned install: /);
    assert.doesNotMatch(text, /\|---\||\*\*/, 'Markdown is rendered, not shown as source');
    assert.doesNotMatch(text, /libbpf: failed|BPF program load failed/, 'attach kinds say what they mean, not libbpf\'s raw text');
    if (process.geteuid?.() === 0) assert.match(text, /helper runs as root: yes/);
    assert.equal(await s.page.locator('.tabs-container .tab', { hasText: 'Untitled' }).count(), 0, 'no untitled buffer');
    await s.screenshot('doctor');
    await s.runCommandFromPalette('View: Close Editor');
    await s.page.waitForTimeout(500);
    assert.equal(await s.page.locator('.dialog-shadow, .monaco-dialog-box').count(), 0, 'closing asks nothing');
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
      await frame.locator('#card-count .value').filter({ hasText: /^[1-9][\d,]*$/ }).waitFor({ timeout: 15_000 });
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
      const pauses = (await frame.locator('#card-pauses .value').innerText()).trim();
      // Collections, and stop-the-world pauses among them: every Serial collection is a pause.
      const total = formatCount(Number(m[1]) + Number(m[2]));
      assert.equal(count, total, 'the panel\'s GC count differs from the JVM\'s own');
      assert.equal(pauses, total, 'the panel\'s pause count differs from the JVM\'s collections (all Serial collections pause)');
      // Per collector, as the JVM's beans count them: Copy (young) and MarkSweepCompact (full).
      const rows = await frame.locator('#collectors tr').allInnerTexts();
      assert.ok(rows.some((r) => new RegExp(`^Copy\\s+young\\s+${m[1]}\\s`).test(r)), `Copy row with ${m[1]}: ${rows.join(' | ')}`);
      assert.ok(rows.some((r) => new RegExp(`^MarkSweepCompact\\s+full\\s+${m[2]}\\s`).test(r)), `MarkSweepCompact row with ${m[2]}: ${rows.join(' | ')}`);

      // The pause timeline's lane labels ("young & other", "full", their scales) fit left of the
      // plot, measured in the canvas's own font: none is cut at the edge ("ung & other").
      const fit = await frame.evaluate(() => {
        const c = document.getElementById('timeline') as HTMLCanvasElement;
        const ctx = c.getContext('2d')!;
        const widths = ['young & other', 'full'].map((x) => ctx.measureText(x).width);
        return { left: Number(c.dataset.plotLeft), widest: Math.max(...widths), font: ctx.font };
      });
      assert.ok(fit.left - 6 >= fit.widest, `the timeline's lane label needs ${fit.widest.toFixed(1)} px, the margin leaves ${fit.left - 6} (${fit.font})`);
      t.diagnostic(`timeline labels: widest ${fit.widest.toFixed(1)} px in ${fit.font}, plot starts at ${fit.left} px`);
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

  await step(
    t,
    s,
    'Run with Leak Tracing: a CodeLens with the outstanding bytes sits on each leaking line, and one on each line that calls it',
    async () => {
      const { source } = buildCFixture(s, 'leaky');
      await s.runCommandAndPick('eBPF: Run with Leak Tracing', 'Type a command line');
      const input = s.page.locator('.quick-input-widget .quick-input-box input');
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Run with Leak Tracing' }).waitFor({ timeout: 10_000 });
      await input.fill('./leaky');
      await input.press('Enter');
      // leaky exits by itself; the session ends with its report and says how many sites it placed.
      const ended = s.page.locator('.notifications-toasts .notification-list-item-message', { hasText: /leak tracing .*exited/ });
      await ended.first().waitFor({ timeout: 30_000 });
      const toast = (await ended.first().innerText()).trim();
      // ebpfStudio.memleak.mode defaults to auto: a launched program is traced by preloading
      assert.match(toast, /leak tracing \(preload mode\)/, `Run with Leak Tracing did not use preload mode: "${toast}"`);

      const editor = await openWorkspaceFile(s, 'leaky.c');
      const expected = [
        { line: lineOf(source, 'LEAK-MALLOC'), text: 'allocated here: 9.8 KB outstanding in 10 allocations' },
        { line: lineOf(source, 'LEAK-CALLOC'), text: 'allocated here: 9.8 KB outstanding in 5 allocations' },
        { line: lineOf(source, 'LEAK-REALLOC'), text: 'allocated here: 2.9 KB outstanding in 1 allocation' },
      ];
      const leakLenses = (all: { line: number; text: string }[]) => all.filter((l) => /outstanding|leaks /.test(l.text));
      const lenses = await waitForCodeLenses(editor, (all) => expected.every((e) => all.some((l) => l.line === e.line)));
      for (const e of expected) {
        const lens = lenses.find((l) => l.line === e.line);
        assert.ok(lens, `no CodeLens on leaky.c:${e.line}; lenses: ${JSON.stringify(lenses)}`);
        assert.ok(lens.text.includes(e.text), `the CodeLens on leaky.c:${e.line} says "${lens.text}", expected "${e.text}"`);
      }
      // nothing on the lines whose memory was freed
      const freed = [lineOf(source, 'FREED:'), lineOf(source, 'FREED-CALLOC'), lineOf(source, 'REALLOC-FIRST')];
      assert.deepEqual(leakLenses(lenses).filter((l) => freed.includes(l.line)), [], `leak CodeLenses on lines whose memory was freed: ${JSON.stringify(lenses)}`);
      // The calls in main() that lead to the leaks, below the first screen, carry the same figures.
      await editor.locator('textarea').first().focus();
      await s.page.keyboard.press('Control+End');
      const callers = [
        { line: lineOf(source, /^\tleak_malloc\(\);/), text: 'via leak_malloc: leaks 9.8 KB in 10 allocations' },
        { line: lineOf(source, /^\tleak_calloc\(\);/), text: 'via leak_calloc: leaks 9.8 KB in 5 allocations' },
      ];
      const below = await waitForCodeLenses(editor, (all) => callers.every((e) => all.some((l) => l.line === e.line)));
      for (const e of callers) {
        const lens = below.find((l) => l.line === e.line);
        assert.ok(lens, `no CodeLens on the calling line leaky.c:${e.line}; lenses: ${JSON.stringify(below)}`);
        assert.ok(lens.text.includes(e.text), `the CodeLens on leaky.c:${e.line} says "${lens.text}", expected "${e.text}"`);
      }
      // (lenses outside the visible lines get no line number: report the ones checked)
      const seen = [...expected.map((e) => lenses.find((l) => l.line === e.line)!), ...callers.map((e) => below.find((l) => l.line === e.line)!)];
      const png = await s.screenshot('memleak-codelens');
      const stats = await s.imageStats(png);
      assert.ok(stats.distinctColors > 20 && stats.nonBackground > 0.02, `the screenshot looks blank: ${JSON.stringify(stats)}`);
      t.diagnostic(`"${toast}"; lenses ${seen.map((l) => `${l.line}: ${l.text}`).join(' | ')}`);
      // The GC and leak panels stay open for the next step, which reloads the window (it clears the leaks and closes them).
    },
    !paletteTitle('ebpfStudio.runWithLeakTracing') ? 'package.json has no ebpfStudio.runWithLeakTracing' : kernelSkipReason(),
  );

  await step(t, s, 'the finished Java GC and leak sessions are in the Sessions view, and their panels come back drawn after Reload Window', () => sessionsRestoreStep(t, s, { gc: !javaGcSkip }),
    !paletteTitle('ebpfStudio.runWithLeakTracing') ? 'package.json has no ebpfStudio.runWithLeakTracing' : kernelSkipReason());

  await step(t, s, 'Find Memory Leaks on a JVM: a CodeLens on the Java line that leaks (live bytes, class, GCs survived, growth)', () => javaHeapLeaksStep(t, s, agentJdk!),
    !paletteTitle('ebpfStudio.findMemoryLeaks') ? 'package.json has no ebpfStudio.findMemoryLeaks' : (kernelSkipReason() ?? agentSkip));
  // After the restore step (it needs the first GC session's panel and row to be the latest).
  await step(t, s, 'Trace Java GC at ~100 GCs/s for half a minute: the figures keep growing and Stop lands promptly', () => gcLiveStep(t, s, jdk!.home), javaGcSkip);

  await step(
    t,
    s,
    'Profile CPU: the flame graph draws, and a click on the hot function opens its source line',
    async () => {
      const { source, binary } = buildCFixture(s, 'cpusplit');
      const work = spawn(binary, ['60'], { cwd: s.workspace, stdio: 'ignore' });
      t.after(() => work.kill('SIGKILL'));
      const pid = work.pid!;
      const { frame, status } = await profileFromPalette(s, pid, 'cpusplit');
      work.kill('SIGKILL'); // profiled: spare the CPU for the next steps
      const canvas = frame.locator('.scroll canvas').first();
      const drawn = await canvas.evaluate((c: HTMLCanvasElement) => {
        const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
        return n / (c.width * c.height);
      });
      assert.ok(drawn > 0.05, `the flame graph canvas is nearly empty (${(drawn * 100).toFixed(1)} % drawn)`);

      // Find hot_a as a user would: search highlights its frames in the find-match color; its
      // box is where that color is, and the tooltip there must name it and its source line.
      await frame.locator('#search').fill('hot_a');
      await frame.locator('.toolbar .status', { hasText: /^matched [1-9]/ }).waitFor({ timeout: 5000 });
      const box = await widestMatchBox(canvas);
      assert.ok(box, 'no frame is highlighted after searching for hot_a');
      await canvas.hover({ position: { x: box.x, y: box.y } });
      const tip = await frame.locator('.tooltip').innerText();
      const at = /^hot_a\b[\s\S]*?(\/\S+\/cpusplit\.c):(\d+)/.exec(tip);
      assert.ok(at, `the tooltip over the highlighted frame does not show hot_a with its source: ${tip}`);
      assert.equal(at[1], source, 'hot_a\'s source is not the workspace copy of cpusplit.c');
      const line = Number(at[2]);
      const first = lineOf(source, /void hot_a\(/);
      const last = lineOf(source, /void hot_b\(/) - 1;
      assert.ok(line > first && line < last, `hot_a's line ${line} is outside its body (lines ${first}–${last})`);
      await s.screenshot('flamegraph-search', await s.webviewElement(frame));

      await canvas.click({ position: { x: box.x, y: box.y } });
      const cursor = await cursorLineAfterOpen(s, 'cpusplit.c', line);
      assert.equal(cursor, line, `the click opened cpusplit.c with the cursor on line ${cursor}, not on hot_a's line ${line}`);
      const png = await s.screenshot('flamegraph-click-opens-source');
      const stats = await s.imageStats(png);
      assert.ok(stats.distinctColors > 20 && stats.nonBackground > 0.02, `the screenshot looks blank: ${JSON.stringify(stats)}`);
      t.diagnostic(`flame graph ${(drawn * 100).toFixed(1)} % drawn; ${(await status.innerText()).trim()}; hot_a ${Math.round(box.w)} px wide → cpusplit.c:${line}`);
      await s.runCommandFromPalette('eBPF: Hide CPU Profile Annotations');
      await s.runCommandFromPalette('View: Close All Editors');
    },
    !paletteTitle('ebpfStudio.profileCpu') ? 'package.json has no ebpfStudio.profileCpu' : kernelSkipReason(),
  );

  await step(
    t,
    s,
    'Profile CPU with the pid of a process that has exited: Enter says so instead of returning silently',
    async () => {
      // the pid of a process that ran and exited (reaped) just now
      const gone = spawnSync('true');
      const pid = gone.pid;
      await s.runCommandFromPalette('eBPF: Profile CPU');
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
      await s.page.locator('.quick-input-widget .quick-input-box input').fill(String(pid));
      await s.pickQuickPickItem(`Use pid ${pid}`);
      const toast = s.page.locator('.notifications-toasts .notification-list-item-message', { hasText: `No process with pid ${pid} is running` });
      await toast.first().waitFor({ timeout: 15_000 });
      const text = (await toast.first().innerText()).trim();
      assert.match(text, /it has exited, or the pid is mistyped/, `the message says: ${text}`);
      t.diagnostic(`"${text}"`);
      await s.page.keyboard.press('Escape');
    },
    !paletteTitle('ebpfStudio.profileCpu') ? 'package.json has no ebpfStudio.profileCpu' : undefined,
  );

  await step(t, s, 'Compare CPU Profiles…: the diff of two profiles whose hot function changed shows it in the movers table', () => compareProfilesStep(t, s),
    !paletteTitle('ebpfStudio.compareProfiles') ? 'package.json has no ebpfStudio.compareProfiles' : kernelSkipReason());

  await step(
    t,
    s,
    'Profile CPU on a program built -O2 without frame pointers: the flame graph shows the leaf\'s callers (CFI unwinding)',
    async () => {
      const why = buildUnwindFixture(s.workspace);
      if (why) throw new Error(why);
      const work = spawn(path.join(s.workspace, 'unwindfix'), ['split', '60'], { cwd: s.workspace, stdio: 'ignore' });
      t.after(() => work.kill('SIGKILL'));
      const pid = work.pid!;
      const { frame } = await profileFromPalette(s, pid, 'unwindfix');
      work.kill('SIGKILL');
      // The view says how stacks were unwound, and both callers of the leaf are frames in it.
      const unwind = (await frame.locator('.unwind').innerText()).trim();
      // auto: the kernel's walk by unwind tables where the kernel has it, else CFI in user space
      assert.match(unwind, /^stacks: (unwind tables in the kernel|CFI for [1-9]\d* modules?)/, `the unwinding line says: ${unwind}`);
      const canvas = frame.locator('.scroll canvas').first();
      for (const fn of ['caller_a', 'caller_b']) {
        // Clear first, so the "matched" status waited for below is this search's, not the last one's.
        await frame.locator('#search').fill('');
        await frame.locator('.toolbar .status', { hasText: /^matched/ }).waitFor({ state: 'detached', timeout: 5000 }).catch(() => {});
        await frame.locator('#search').fill(fn);
        await frame.locator('.toolbar .status', { hasText: /^matched [1-9]/ }).waitFor({ timeout: 5000 });
        const box = await widestMatchBox(canvas);
        assert.ok(box, `no frame is highlighted after searching for ${fn}: the leaf's caller is missing`);
        await canvas.hover({ position: { x: box.x, y: box.y } });
        const tip = await frame.locator('.tooltip').innerText();
        assert.match(tip, new RegExp(`^${fn}\\b`), `the tooltip over the highlighted frame: ${tip}`);
      }
      await s.screenshot('flamegraph-no-frame-pointers', await s.webviewElement(frame));
      await s.runCommandFromPalette('eBPF: Hide CPU Profile Annotations');
      await s.runCommandFromPalette('View: Close All Editors');
    },
    !paletteTitle('ebpfStudio.profileCpu') ? 'package.json has no ebpfStudio.profileCpu' : kernelSkipReason(),
  );

  await step(
    t,
    s,
    'Profile CPU → Measure: Wall clock: the flame graph is rooted at and coloured by thread state, with each state\'s total in the legend',
    async () => {
      const { binary } = buildCFixture(s, 'offcpuwait');
      const work = spawn(binary, [], { cwd: s.workspace, stdio: 'ignore' });
      t.after(() => work.kill('SIGKILL'));
      const pid = work.pid!;
      await s.runCommandFromPalette('eBPF: Profile CPU');
      const title = s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' });
      await title.waitFor({ timeout: 30_000 });
      // the list renders only the rows that fit: filter it to the Measure item
      await s.page.locator('.quick-input-widget .quick-input-box input').fill('Measure');
      await s.pickQuickPickItem(/Measure: CPU/);
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile: what to measure' }).waitFor({ timeout: 15_000 });
      await s.pickQuickPickItem(/^Wall clock/);
      await s.page.waitForTimeout(500); // the target list opens again
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
      await s.page.locator('.quick-input-widget .quick-input-box input').fill(String(pid));
      await s.pickQuickPickItem(new RegExp(`\\b${pid}\\s+offcpuwait`));
      await answerSampling(s);
      const frame = await s.webviewFrame(`Wall clock: pid ${pid} (offcpuwait)`);
      await s.page.waitForTimeout(4000);
      await frame.locator('button', { hasText: /^Stop$/ }).click();
      const legend = frame.locator('.legend');
      await legend.filter({ hasText: /Where the time went:/ }).waitFor({ timeout: 30_000 });
      const text = (await legend.innerText()).replace(/\s+/g, ' ');
      work.kill('SIGKILL');
      for (const state of ['on CPU', 'sleeping', 'lock \\(futex wait\\)']) assert.match(text, new RegExp(`${state} [\\d.]+ (µs|ms|s) \\([\\d.]+ %\\)`), `the legend lists ${state} with its time: ${text}`);
      // the state frames are the roots: searching one highlights a box
      await frame.locator('#search').fill('[off-CPU: sleeping]');
      await frame.locator('.toolbar .status', { hasText: /^matched [1-9]/ }).waitFor({ timeout: 5000 });
      await s.screenshot('flamegraph-wall-clock-states', await s.webviewElement(frame));
      await s.runCommandFromPalette('View: Close All Editors');
    },
    !paletteTitle('ebpfStudio.profileCpu') ? 'package.json has no ebpfStudio.profileCpu' : kernelSkipReason(),
  );

  await step(
    t,
    s,
    'Profile CPU → Measure: Wall clock on a JVM: stacks by thread group, the JVM\'s service threads hidden behind one toggle',
    async () => {
      const classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-offcpuwaits-'));
      t.after(() => fs.rmSync(classDir, { recursive: true, force: true }));
      const javac = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', classDir, path.join(repoRoot, 'test', 'fixtures', 'java', 'OffcpuWaits.java')], { encoding: 'utf8' });
      assert.equal(javac.status, 0, `javac failed: ${javac.stderr}`);
      const work = spawn(path.join(jdk!.home, 'bin', 'java'), ['-cp', classDir, 'OffcpuWaits', '120000'], { stdio: ['ignore', 'pipe', 'inherit'] });
      t.after(() => work.kill('SIGKILL'));
      let out = '';
      work.stdout!.on('data', (d) => (out += d));
      const deadline = Date.now() + 30_000;
      while (!out.includes('ready') && Date.now() < deadline) await s.page.waitForTimeout(200);
      assert.ok(out.includes('ready'), 'the OffcpuWaits JVM did not start');
      const pid = work.pid!;
      await s.runCommandFromPalette('eBPF: Profile CPU');
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
      await s.page.locator('.quick-input-widget .quick-input-box input').fill('Measure');
      await s.pickQuickPickItem(/Measure: CPU/);
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile: what to measure' }).waitFor({ timeout: 15_000 });
      await s.pickQuickPickItem(/^Wall clock/);
      await s.page.waitForTimeout(500); // the target list opens again
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
      await s.page.locator('.quick-input-widget .quick-input-box input').fill(String(pid));
      await s.pickQuickPickItem(new RegExp(`\\b${pid}\\s+OffcpuWaits`));
      await answerSampling(s);
      const frame = await s.webviewFrame(`Wall clock: pid ${pid} (OffcpuWaits)`, 60_000);
      await s.page.waitForTimeout(4000);
      await frame.locator('button', { hasText: /^Stop$/ }).click();
      await frame.locator('.legend').filter({ hasText: /Where the time went:/ }).waitFor({ timeout: 30_000 });
      work.kill('SIGKILL');
      // hidden by default: the toggle says how much of the wall clock the service threads took
      const toggle = frame.locator('.toolbar button', { hasText: /JVM threads/ });
      const label = await toggle.innerText();
      const m = /^Show JVM threads \(([\d.]+)% hidden\)$/.exec(label);
      assert.ok(m, `the toggle reads "${label}"`);
      t.diagnostic(`wall clock of OffcpuWaits: the JVM's service threads took ${m[1]} %, hidden by default`);
      assert.ok(Number(m[1]) > 20, `a JVM's ~15 idle service threads take most of its wall clock, here ${m[1]} %`);
      const matched = async (q: string) => {
        await frame.locator('#search').fill(q);
        await frame.locator('.toolbar .status', { hasText: /^matched / }).waitFor({ timeout: 5000 });
        await s.page.waitForTimeout(300);
        return Number(/matched ([\d.]+)%/.exec(await frame.locator('.toolbar .status', { hasText: /^matched / }).innerText())?.[1]);
      };
      assert.equal(await matched('[Application threads]'), 100, 'only the application\'s threads are drawn');
      assert.equal(await matched('[GC threads]'), 0);
      await s.screenshot('flamegraph-wall-clock-jvm', await s.webviewElement(frame));
      await toggle.click();
      await frame.locator('.toolbar button', { hasText: /^Hide JVM threads$/ }).waitFor({ timeout: 5000 });
      assert.ok((await matched('[GC threads]')) > 0, 'the toggle shows the GC threads again');
      assert.ok((await matched('sleepLong')) > 0, 'the application\'s own methods are in the graph');
      await s.runCommandFromPalette('View: Close All Editors');
    },
    !paletteTitle('ebpfStudio.profileCpu') ? 'package.json has no ebpfStudio.profileCpu' : (kernelSkipReason() ?? (jdk ? undefined : 'no JDK with javac found (apt-get install openjdk-17-jdk)')),
  );

  await step(
    t,
    s,
    'Profile CPU → Measure: Java locks: the flame graph shows the waiters under [lock … held by …], and the contended line gets a "⏸ … lock" CodeLens',
    async () => {
      // the fixture in the workspace, so its source is open-able where the lens goes
      const src = path.join(s.workspace, 'LockContention.java');
      fs.copyFileSync(path.join(repoRoot, 'test', 'fixtures', 'java', 'LockContention.java'), src);
      const classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-lockcontention-'));
      t.after(() => fs.rmSync(classDir, { recursive: true, force: true }));
      // -sourcepath: FixtureRun.java, the fixture's helper, compiled from the repository beside it
      const javac = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', classDir, '-sourcepath', path.join(repoRoot, 'test', 'fixtures', 'java'), src], { encoding: 'utf8' });
      assert.equal(javac.status, 0, `javac failed: ${javac.stderr}`);
      // it waits for the agent's lock thread, then contends for ~1 s and prints "done …"
      const work = spawn(path.join(jdk!.home, 'bin', 'java'), ['-cp', classDir, 'LockContention', 'ebpf-studio-locks', '120000'], { stdio: ['ignore', 'pipe', 'inherit'] });
      t.after(() => work.kill('SIGKILL'));
      let out = '';
      work.stdout!.on('data', (d) => (out += d));
      const deadline = Date.now() + 30_000;
      while (!out.includes('ready') && Date.now() < deadline) await s.page.waitForTimeout(200);
      assert.ok(out.includes('ready'), 'the LockContention JVM did not start');
      const pid = work.pid!;
      await s.runCommandFromPalette('eBPF: Profile CPU');
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
      await s.page.locator('.quick-input-widget .quick-input-box input').fill('Measure');
      await s.pickQuickPickItem(/Measure: CPU/);
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile: what to measure' }).waitFor({ timeout: 15_000 });
      await s.pickQuickPickItem(/Java locks \(contended monitors and parks\)/);
      await s.page.waitForTimeout(500); // the target list opens again, JVMs only
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
      await s.page.locator('.quick-input-widget .quick-input-box input').fill(String(pid));
      await s.pickQuickPickItem(new RegExp(`\\b${pid}\\s+LockContention`));
      await answerSampling(s);
      const frame = await s.webviewFrame(`Java locks: pid ${pid} (LockContention)`, 60_000);
      const finished = Date.now() + 90_000;
      while (!/done monitor-wait/.test(out) && Date.now() < finished) await s.page.waitForTimeout(500);
      assert.match(out, /done monitor-wait/, 'the workload did not finish its contended rounds');
      await frame.locator('button', { hasText: /^Stop$/ }).click();
      const legend = frame.locator('.legend');
      await legend.filter({ hasText: /Where the time went:/ }).waitFor({ timeout: 30_000 });
      const text = (await legend.innerText()).replace(/\s+/g, ' ');
      work.kill('SIGKILL');
      assert.match(text, /lock \(futex wait\) [\d.]+ (µs|ms|s) \([\d.]+ %\)/, `the legend lists the lock state with its time: ${text}`);
      // the synchronized waiters' leaf frame names the monitor's class and its holder
      await frame.locator('#search').fill('[lock LockContention$Account held by mon-holder');
      await frame.locator('.toolbar .status', { hasText: /^matched [1-9]/ }).waitFor({ timeout: 10_000 });
      await s.screenshot('flamegraph-java-locks', await s.webviewElement(frame));
      await s.runCommandFromPalette('View: Close All Editors');
      // the line of the contended synchronized block: its wait time, in the lock state
      const line = lineOf(src, 'MARK enterMonitor');
      const editor = await openWorkspaceFile(s, 'LockContention.java');
      const lenses = await waitForCodeLenses(editor, (all) => all.some((l) => l.line === line && l.text.startsWith('⏸')), 30_000);
      const lens = lenses.find((l) => l.line === line && l.text.startsWith('⏸'));
      assert.ok(lens, `no wait CodeLens on LockContention.java:${line}; lenses: ${JSON.stringify(lenses)}`);
      assert.match(lens.text, /^⏸ [\d.]+ (µs|ms|s) waiting \(\d+%\) · lock [\d.]+ (µs|ms|s)/, `the lens on the contended line: ${lens.text}`);
      await s.runCommandFromPalette('eBPF: Hide CPU Profile Annotations');
      await s.runCommandFromPalette('View: Close All Editors');
    },
    !paletteTitle('ebpfStudio.profileCpu') ? 'package.json has no ebpfStudio.profileCpu' : (kernelSkipReason() ?? (jdk ? undefined : 'no JDK with javac found (apt-get install openjdk-17-jdk)')),
  );

  await step(
    t,
    s,
    'Open JVM Timeline: pick the test JVM, Stop, select a range, see its statistics (allocation rate, off-CPU states) and flame graph; a running timeline comes back stopped after Reload Window',
    async () => {
      const classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-gcphases-'));
      t.after(() => fs.rmSync(classDir, { recursive: true, force: true }));
      const javac = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', classDir, path.join(repoRoot, 'test', 'fixtures', 'java', 'GcPhases.java')], { encoding: 'utf8' });
      assert.equal(javac.status, 0, `javac failed: ${javac.stderr}`);
      const child = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+UseParallelGC', '-Xmx256m', '-cp', classDir, 'GcPhases', '2', '600', '60'], { stdio: ['pipe', 'pipe', 'inherit'] });
      t.after(() => child.kill('SIGKILL'));
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      const exited = new Promise<void>((r) => child.on('exit', () => r()));
      for (let i = 0; i < 200 && !out.includes('ready'); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(out.includes('ready'), `GcPhases did not start: ${out}`);
      await s.runCommandFromPalette('eBPF: Open JVM Timeline');
      const row = s.quickPickRow(new RegExp(`\\b${child.pid}\\s+GcPhases`));
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      await row.click();
      const title = `JVM timeline: pid ${child.pid}`;
      const frame = await s.webviewFrame(title, 30_000);
      await frame.locator('#status').filter({ hasText: `Tracing pid ${child.pid}` }).waitFor({ timeout: 30_000 });
      child.stdin!.write('go\n');
      await exited;
      // The JVM is gone: the session ends by itself and keeps its data.
      await frame.locator('#status').filter({ hasText: /Process exited|Stopped/ }).waitFor({ timeout: 30_000 });
      // Select most of the session across the lanes.
      await selectTimelineRange(s, frame);
      const gcRow = await frame.locator('#range-gc').innerText();
      assert.match(gcRow, /PS MarkSweep ×2/, `the range's GC row: ${gcRow}`);
      const cpuRow = await frame.locator('#range-cpu').innerText();
      assert.match(cpuRow, /CPU samples\s+[1-9]\d*:/, `the range's CPU row: ${cpuRow}`);
      const samples = Number(await frame.locator('#flame canvas').getAttribute('data-samples'));
      assert.ok(samples > 0, 'the flame graph of the range has samples');
      const painted = await frame.evaluate(() => {
        const c = document.querySelector('#flame canvas') as HTMLCanvasElement;
        const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
        return n;
      });
      assert.ok(painted > 500, `the range's flame graph is drawn (${painted} painted pixels)`);
      const png = await s.screenshot('jvm-timeline-panel', await s.webviewElement(frame));
      const stats = await s.imageStats(png);
      assert.ok(stats.distinctColors > 20 && stats.nonBackground > 0.02, `the panel screenshot looks blank: ${JSON.stringify(stats)}`);
      // The allocation rate (MB/s between GCs) and the off-CPU time of the thread groups.
      const allocRow = await frame.locator('#range-alloc').innerText();
      assert.match(allocRow, /Allocation\s+([\d.]+ MB\/s|no two GCs)/, `the range's allocation row: ${allocRow}`);
      const offRow = await frame.locator('#range-offcpu').innerText();
      assert.match(offRow, /Application threads: .*lock \(futex\) [\d.]+ s/, `the range's off-CPU row: ${offRow}`);
      t.diagnostic(`range: ${gcRow} / ${cpuRow} / ${allocRow} / ${offRow}; flame graph ${samples} samples`);
      await s.runCommandFromPalette('View: Close All Editors');

      // Reload Window while a timeline runs: the panel comes back stopped, saying why, with its data.
      const idle = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+UseParallelGC', '-Xmx64m', '-cp', classDir, 'GcPhases', '1', '100', '10'], { stdio: ['pipe', 'pipe', 'inherit'] });
      t.after(() => idle.kill('SIGKILL'));
      let idleOut = '';
      idle.stdout!.on('data', (d) => (idleOut += d));
      for (let i = 0; i < 200 && !idleOut.includes('ready'); i++) await new Promise((r) => setTimeout(r, 100));
      await s.runCommandFromPalette('eBPF: Open JVM Timeline');
      const idleRow = s.quickPickRow(new RegExp(`\\b${idle.pid}\\s+GcPhases`));
      await idleRow.waitFor({ state: 'visible', timeout: 30_000 });
      await idleRow.click();
      const liveTitle = `JVM timeline: pid ${idle.pid}`;
      const live = await s.webviewFrame(liveTitle, 30_000);
      await live.locator('#status').filter({ hasText: `Tracing pid ${idle.pid}` }).waitFor({ timeout: 30_000 });
      await s.page.waitForTimeout(2500);
      const lanesBefore = await live.locator('#lanes').getAttribute('height');
      await s.reloadWindow();
      const tab = s.page.locator('.tabs-container .tab').filter({ hasText: liveTitle }).first();
      await tab.waitFor({ state: 'visible', timeout: 30_000 });
      await tab.click();
      const back = await s.webviewFrame(liveTitle, 60_000);
      const status = back.locator('#status').filter({ hasText: /Stopped \(pid \d+\): the window reloaded/ });
      await status.waitFor({ timeout: 30_000 });
      assert.equal(await back.locator('#lanes').getAttribute('height'), lanesBefore, 'the restored panel draws the same lanes');
      assert.ok(await back.locator('#stop').isDisabled(), 'a restored session cannot be stopped again');
      t.diagnostic(`after Reload Window: ${await status.innerText()}`);
      idle.kill('SIGKILL');
      await s.runCommandFromPalette('View: Close All Editors');
    },
    !paletteTitle('ebpfStudio.openJvmTimeline') ? 'package.json has no ebpfStudio.openJvmTimeline' : javaGcSkip,
  );

  await step(
    t,
    s,
    'Profile CPU on a JVM without -XX:+PreserveFramePointer: "Java: full stacks (agent)" is the default, the live and the final flame graph have the Java callers, a click opens the .java line',
    async () => {
      // The fixture's source sits in the workspace, where the click must find it.
      const source = path.join(s.workspace, 'AgentSplit.java');
      fs.copyFileSync(path.join(repoRoot, 'test', 'fixtures', 'java', 'AgentSplit.java'), source);
      const classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-agentsplit-'));
      t.after(() => fs.rmSync(classDir, { recursive: true, force: true }));
      const javac = spawnSync(path.join(agentJdk!, 'bin', 'javac'), ['-d', classDir, source], { encoding: 'utf8' });
      assert.equal(javac.status, 0, `javac failed: ${javac.stderr}`);
      const jvm = spawn(path.join(agentJdk!, 'bin', 'java'), ['-cp', classDir, 'AgentSplit', '120'], { cwd: classDir, stdio: 'ignore' });
      t.after(() => jvm.kill('SIGKILL'));
      const pid = jvm.pid!;
      await s.page.waitForTimeout(2000); // let heavy/light get compiled
      await s.runCommandFromPalette('eBPF: Profile CPU');
      const input = s.page.locator('.quick-input-widget .quick-input-box input');
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: what to sample' }).waitFor({ timeout: 30_000 });
      await input.fill(String(pid));
      await s.pickQuickPickItem(new RegExp(`\\b${pid}\\s+AgentSplit`));
      // No sampling questions (the defaults apply): the Java step comes right after the target.
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Profile CPU: Java stacks' }).waitFor({ timeout: 10_000 });
      const focused = await s.page.locator('.quick-input-widget .monaco-list-row.focused').first().innerText();
      assert.match(focused, /Java: full stacks \(agent\)/, `the default Java choice is not the agent: ${focused}`);
      await input.press('Enter');

      const frame = await s.webviewFrame(`CPU: pid ${pid} (AgentSplit)`);
      const status = frame.locator('.toolbar > .status').last();
      await status.filter({ hasText: /Sampling… [1-9][\d,]* samples/ }).waitFor({ timeout: 30_000 });
      // While sampling, the live graph already has the agent's Java frames (joined as its records come in).
      await status.filter({ hasText: /live graph of [1-9]/ }).waitFor({ timeout: 15_000 });
      await frame.locator('#search').fill('AgentSplit.heavy');
      const liveMatch = frame.locator('.toolbar .status', { hasText: /^matched [1-9]/ });
      await liveMatch.waitFor({ timeout: 10_000 });
      t.diagnostic(`before Stop: ${(await status.innerText()).trim()}; AgentSplit.heavy ${(await liveMatch.innerText()).trim()}`);
      await s.screenshot('flamegraph-java-agent-live', await s.webviewElement(frame));
      await frame.locator('#search').fill('');
      await s.page.waitForTimeout(2000);
      await frame.locator('button', { hasText: /^Stop$/ }).click();
      await status.filter({ hasText: /samples(, [\d,]+ lost)? at \d+ Hz/ }).waitFor({ timeout: 60_000 });
      jvm.kill('SIGKILL');
      const canvas = frame.locator('.scroll canvas').first();
      await frame.locator('#search').fill('AgentSplit.heavy');
      await frame.locator('.toolbar .status', { hasText: /^matched [1-9]/ }).waitFor({ timeout: 5000 });
      const box = await widestMatchBox(canvas);
      assert.ok(box, 'no frame is highlighted after searching for AgentSplit.heavy');
      await canvas.hover({ position: { x: box.x, y: box.y } });
      const tip = await frame.locator('.tooltip').innerText();
      const at = /AgentSplit\.heavy\b[\s\S]*?AgentSplit\.java:(\d+)/.exec(tip);
      assert.ok(at, `the tooltip over the highlighted frame does not show AgentSplit.heavy with its source: ${tip}`);
      assert.equal(Number(at[1]), lineOf(source, 'return mix(s, 300_000);'), 'heavy\'s frame is on its call of mix');
      await canvas.click({ position: { x: box.x, y: box.y } });
      const cursor = await cursorLineAfterOpen(s, 'AgentSplit.java', Number(at[1]));
      assert.equal(cursor, Number(at[1]), `the click opened AgentSplit.java with the cursor on line ${cursor}, not on line ${at[1]}`);
      await s.screenshot('flamegraph-java-agent-click-opens-source');
      t.diagnostic(`${(await status.innerText()).trim()}; AgentSplit.heavy ${Math.round(box.w)} px wide → AgentSplit.java:${at[1]}`);
      // Focus back on the workbench (the click left it in the webview) before using the palette.
      await s.page.keyboard.press('Escape');
      await s.page.locator('.monaco-workbench').first().click({ position: { x: 5, y: 5 } });
      await s.runCommandFromPalette('eBPF: Hide CPU Profile Annotations');
      await s.runCommandFromPalette('View: Close All Editors');
    },
    !paletteTitle('ebpfStudio.profileCpu') ? 'package.json has no ebpfStudio.profileCpu' : (kernelSkipReason() ?? agentSkip),
  );

  await step(
    t,
    s,
    'BPF build task (Tasks: Run Task → ebpf: build): a compile error lands in Problems on its line',
    async () => {
      const file = path.join(s.workspace, 'broken.bpf.c');
      fs.writeFileSync(
        file,
        [
          '#include "vmlinux.h"',
          '#include <bpf/bpf_helpers.h>',
          '',
          'SEC("tracepoint/syscalls/sys_enter_openat")',
          'int count_openat(void *ctx)',
          '{',
          '\treturn undeclared_counter + 1; /* COMPILE-ERROR */',
          '}',
          '',
          'char LICENSE[] SEC("license") = "GPL";',
          '',
        ].join('\n'),
      );
      const errorLine = lineOf(file, 'COMPILE-ERROR');
      await openWorkspaceFile(s, 'broken.bpf.c');
      const runTask = async () => {
        await s.runCommandFromPalette('Tasks: Run Task');
        await pickExact(s, 'ebpf'); // the task type's folder
        await pickExact(s, 'ebpf: build');
      };
      await runTask();
      // A failed task reveals its terminal in the panel, over Problems: ask for Problems until the
      // build has ended and its error is listed. The task list fills in as task providers answer,
      // so a click can land while it re-sorts and start nothing (CI saw that once): run it again
      // if nothing is listed after 15 s; a second build of the same file gives the same error.
      const row = s.page.locator('.markers-panel .monaco-list-row', { hasText: 'undeclared_counter' }).first();
      const deadline = Date.now() + 45_000;
      let retried = false;
      for (;;) {
        if (!retried && Date.now() > deadline - 30_000) {
          retried = true;
          await s.page.keyboard.press('Escape');
          await runTask();
        }
        await s.runCommandFromPalette('View: Focus Problems (Errors, Warnings, Infos)');
        try {
          await row.waitFor({ timeout: 2000 });
          break;
        } catch (e) {
          if (Date.now() > deadline) throw new Error(`the compile error did not appear in Problems within 45 s (the task was started twice); rows: ${(await problemRows(s)).join(' || ')}`, { cause: e });
        }
      }
      const rows = await problemRows(s);
      const ours = rows.find((r) => r.includes('undeclared_counter'))!;
      const errorCol = fs.readFileSync(file, 'utf8').split('\n')[errorLine - 1].indexOf('undeclared_counter') + 1;
      assert.match(ours, new RegExp(`\\[Ln ${errorLine}, Col ${errorCol}\\]`), `the Problems row is not at line ${errorLine}, column ${errorCol}: ${ours}`);
      assert.match(ours, /undeclared identifier/);
      // "clang" is the $ebpf-clang matcher's source (the language server's diagnostics say "ebpf").
      assert.match(ours, /generated by clang/, 'the Problems row does not come from the build task\'s problem matcher');
      const png = await s.screenshot('bpf-build-problems');
      const stats = await s.imageStats(png);
      assert.ok(stats.distinctColors > 20 && stats.nonBackground > 0.02, `the screenshot looks blank: ${JSON.stringify(stats)}`);
      t.diagnostic(`Problems: ${rows.join(' || ')}`);
    },
    !paletteTitle('ebpfStudio.buildBpf') ? 'package.json has no ebpfStudio.buildBpf' : bpfBuildSkip(),
  );
});

/**
 * The middle of the widest run of search-highlighted pixels in one row of a flame-graph canvas, in
 * CSS px: the matched function's widest box (truncated stacks may show it elsewhere, narrower).
 */
function widestMatchBox(canvas: Locator): Promise<{ x: number; y: number; w: number } | undefined> {
  return canvas.evaluate((c: HTMLCanvasElement) => {
    const probe = document.createElement('canvas').getContext('2d')!;
    probe.fillStyle = getComputedStyle(document.body).getPropertyValue('--vscode-editor-findMatchHighlightBackground').trim() || '#e040e0';
    probe.fillRect(0, 0, 1, 1);
    const want = probe.getImageData(0, 0, 1, 1).data;
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let best = { x: -1, y: -1, w: 0 };
    for (let y = 0; y < c.height; y++) {
      let start = -1;
      for (let x = 0; x <= c.width; x++) {
        const i = (y * c.width + x) * 4;
        const hit = x < c.width && Math.abs(d[i + 3] - want[3]) <= 8 && Math.abs(d[i] - want[0]) <= 8 && Math.abs(d[i + 1] - want[1]) <= 8 && Math.abs(d[i + 2] - want[2]) <= 8;
        if (hit && start < 0) start = x;
        if (!hit && start >= 0) {
          if (x - start > best.w) best = { x: (start + x) / 2, y, w: x - start };
          start = -1;
        }
      }
    }
    if (best.w === 0) return undefined;
    // best.y is the box's top edge: aim at the middle of its height.
    let y1 = best.y;
    const cx = Math.floor(best.x);
    while (y1 + 1 < c.height && Math.abs(d[((y1 + 1) * c.width + cx) * 4 + 3] - want[3]) <= 8 && Math.abs(d[((y1 + 1) * c.width + cx) * 4] - want[0]) <= 8) y1++;
    const k = c.width / c.clientWidth;
    return { x: best.x / k, y: (best.y + y1) / 2 / k, w: best.w / k };
  });
}

/** Why the build task cannot compile BPF here (it needs clang, and bpftool with kernel BTF for vmlinux.h). */
function bpfBuildSkip(): string | undefined {
  if (!findTool('clang')) return 'clang is not installed (apt-get install clang)';
  if (!findTool('bpftool')) return 'bpftool is not installed (apt-get install bpftool)';
  if (!fs.existsSync('/sys/kernel/btf/vmlinux')) return 'the kernel has no BTF (/sys/kernel/btf/vmlinux) to generate vmlinux.h from';
  return undefined;
}

/** Clicks the Quick Pick row whose label is exactly `label` (after its icon, if any). */
async function pickExact(s: EditorSession, label: string): Promise<void> {
  const row = s.page
    .locator('.quick-input-widget .quick-input-list .monaco-list-row')
    .filter({ has: s.page.locator('.label-name', { hasText: new RegExp(`^\\s*${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`) }) })
    .first();
  await row.waitFor({ state: 'visible', timeout: 15_000 });
  await row.click();
}

/**
 * Pixels of the histogram canvas in the young/full (charts-blue/red) series colors, below the legend
 * (whose swatches use the same colors): > 0 only when a bar is drawn.
 */
async function histogramBarPixels(s: EditorSession, title: string): Promise<number> {
  const frame = await s.webviewFrame(title);
  return canvasColorPixels(frame, 'histogram', ['--vscode-charts-blue:#3794ff', '--vscode-charts-red:#f14c4c'], { skipTopPx: 20 });
}
