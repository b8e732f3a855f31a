// The three tracers on the log2-histogram kit in a real VS Code (code-server): each palette
// command, run as a user would (scope, unit), against a workload this test starts, draws a panel
// whose figures are the workload's: block I/O latency per process (two dd processes doing O_DIRECT
// writes and reads on the disk backing /var/tmp), on-CPU time per run of one process (a C program
// that burns 700 µs of CPU and sleeps, round after round) and TCP connect latency per remote
// address (connects to a listener on a loopback address of this test's own). Each panel speaks
// its tracer's nouns, not runqlat's "waits"; screenshots go to test-artifacts/<tracer>-panel.png.
// On-CPU time of a podman container picked by "A container…" (by its name and image) counts its
// busy tasks' runs, and nothing of a container that sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Frame } from 'playwright-core';
import { canvasColorPixels, type EditorSession, repoRoot, skipReason } from './codeServer';
import { kernelSkipReason, waitFor } from '../helpers';
import { startSession, step } from './steps';
import { IMAGE, containerPrep, podman } from '../kernel/containerKit';

const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
const hasCommand = (id: string) => (manifest.contributes?.commands ?? []).some((c: { command: string }) => c.command === id);
const missing = ['ebpfStudio.showBlockIoLatency', 'ebpfStudio.showCpuDistribution', 'ebpfStudio.showTcpLatency'].filter((c) => !hasCommand(c));
const skip = skipReason() ?? kernelSkipReason() ?? (missing.length ? `package.json lacks ${missing.join(', ')}` : undefined);

/** 4 KiB O_DIRECT requests per dd: each is one block request of its own. */
const IOS = 1000;
/** burn/sleep rounds of the on-CPU workload: one run on a CPU each */
const ROUNDS = 500;
const CONNECTS = 200;
const ADDR = `127.${77 + (process.pid % 100)}.${(process.pid >> 8) & 255}.${1 + (process.pid % 250)}`;

// One thread: waits for a byte on stdin, then ROUNDS times burns 700 µs of its own CPU time and
// sleeps 1.4 ms (each burn is one run on a CPU, ended by the sleep), says "done", waits for EOF.
const BURN_C = String.raw`
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static long long cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(int argc, char **argv) {
  struct timespec nap = { 0, 1400000 };
  char c;
  long rounds = argc > 1 ? atol(argv[1]) : 0;
  if (read(0, &c, 1) != 1) return 1;
  for (long i = 0; i < rounds; i++) {
    long long until = cpu_ns() + 700000;
    while (cpu_ns() < until) {}
    nanosleep(&nap, NULL);
  }
  printf("done\n");
  fflush(stdout);
  while (read(0, &c, 1) > 0) {}
  return 0;
}
`;

/** The key table as { header: cells }, read after it was scrolled into view (rows off screen keep old text). */
async function keyTable(frame: Frame): Promise<{ head: string[]; rows: string[][] }> {
  await frame.locator('#key-table').scrollIntoViewIfNeeded();
  await frame.waitForTimeout(300);
  // no named functions inside: tsx's keepNames would call its __name helper, absent in the page
  const [head, ...rows] = await frame.evaluate(() =>
    [...document.querySelectorAll('#key-table tr')].filter((tr, i) => i === 0 || tr.classList.contains('key-row')).map((tr) => [...tr.children].map((c) => (c.textContent ?? '').trim())),
  );
  return { head: head ?? [], rows };
}

/**
 * The histogram's buckets as its tooltips tell them ("512 µs – 1.02 ms" → count): the bars are a
 * canvas, so the pointer moves across it (mousemove events, one every 4 px) as over each bar.
 */
async function histogramBuckets(frame: Frame): Promise<Map<string, number>> {
  const tips = await frame.locator('#histogram').evaluate((c) => {
    const r = c.getBoundingClientRect();
    const tip = document.querySelector('.tooltip') as HTMLElement;
    const seen: string[] = [];
    for (let x = r.left + 1; x < r.right; x += 4) {
      c.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: r.top + r.height / 2 }));
      if (tip.style.display !== 'none') seen.push(tip.textContent ?? '');
    }
    c.dispatchEvent(new MouseEvent('mouseleave'));
    return seen;
  });
  const out = new Map<string, number>();
  for (const m of tips.map((t) => /^(.+)\ncount: (\d+)/.exec(t))) if (m) out.set(m[1], Number(m[2]));
  return out;
}

const num = (text: string) => Number(text.replace(/,/g, ''));
/** "724 µs", "1.02 ms", "850 ns" in µs */
const usOf = (text: string) => Number.parseFloat(text) * ({ ns: 1e-3, 'µs': 1, ms: 1e3, s: 1e6 }[text.trim().split(' ')[1]] ?? NaN);

/** Polls an async condition (a DOM read) every 250 ms; false when it never held. */
async function until(cond: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return cond();
}

/** Stops the panel's session once `settled` holds, then checks it drew bars and speaks `events`, not runqlat's waits. */
async function stopAndCheck(frame: Frame, events: string, one: string): Promise<void> {
  await frame.locator('#stop').click();
  await frame.locator('#status').filter({ hasText: /Stopped/ }).waitFor({ timeout: 10_000 });
  const cards = await frame.locator('#cards .label').allInnerTexts();
  assert.deepEqual(cards.slice(0, 2), [events, `p50 ${one}`], 'the cards name the tracer\'s events');
  const text = await frame.evaluate(() => document.body.innerText);
  assert.doesNotMatch(text, /\bwaits?\b/i, 'runqlat\'s noun on another tracer\'s panel');
  assert.match(await frame.locator('#heat-legend').innerText(), new RegExp(`how many ${events} fell in the cell`));
  assert.ok((await canvasColorPixels(frame, 'histogram', ['--vscode-charts-blue:#3794ff'], { skipTopPx: 20 })) > 50, 'the histogram is blank');
}

/** The panel from the top, as a user first sees it, in test-artifacts/<name>.png; checked not blank. */
async function shoot(s: EditorSession, frame: Frame, name: string): Promise<void> {
  await frame.evaluate(() => window.scrollTo(0, 0));
  const png = await s.screenshot(name, await s.webviewElement(frame));
  const stats = await s.imageStats(png);
  assert.ok(stats.distinctColors > 20 && stats.nonBackground > 0.02, `the ${name} screenshot looks blank: ${JSON.stringify(stats)}`);
}

/** Runs a kit tracer's palette command with its scope (and process) and the µs unit. */
async function openPanel(s: EditorSession, command: string, scope: string, pid?: { pid: number; comm: string }): Promise<void> {
  await s.runCommandFromPalette('View: Close All Editors');
  await s.runCommandAndPick(command, scope);
  if (pid) {
    await s.page.locator('.quick-input-widget .quick-input-title', { hasText: ': process' }).waitFor({ timeout: 15_000 });
    await s.page.locator('.quick-input-widget .quick-input-box input').fill(String(pid.pid));
    await s.pickQuickPickItem(new RegExp(`\\b${pid.pid}\\s+${pid.comm}`));
  }
  await s.pickQuickPickItem('Microseconds');
}

test('the kit tracers\' panels (block I/O, on-CPU time, TCP connect latency) show their workloads in a real VS Code', { skip, timeout: 300_000 }, async (t) => {
  const s = await startSession(t);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-kitpanels-'));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  await step(t, s, 'Block I/O Latency per process: each dd\'s O_DIRECT requests counted under its pid, named dd', async () => {
    const file = path.join('/var/tmp', `ebpf-studio-kitpanels-${process.pid}.dat`);
    t.after(() => fs.rmSync(file, { force: true }));
    // written (and on disk) before tracing: the traced writes overwrite it in place, one request each
    assert.equal(spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=4k', `count=${IOS}`, 'oflag=direct', 'status=none']).status, 0);
    await openPanel(s, 'eBPF: Show Block I/O Latency', 'Per process');
    const frame = await s.webviewFrame('Block I/O Latency: whole system, per process');
    await frame.locator('#status').filter({ hasText: 'Tracing whole system, per process' }).waitFor({ timeout: 15_000 });
    const dd = async (args: string[]) => {
      const child = spawn('dd', [...args, 'bs=4k', `count=${IOS}`, 'status=none'], { stdio: 'ignore' });
      const code = await new Promise((r) => child.on('exit', r));
      assert.equal(code, 0, `dd ${args.join(' ')}`);
      return child.pid!;
    };
    const writer = await dd(['if=/dev/zero', `of=${file}`, 'oflag=direct', 'conv=notrunc']);
    const reader = await dd([`if=${file}`, 'of=/dev/null', 'iflag=direct']);
    const rowOf = (table: { rows: string[][] }, pid: number) => table.rows.find((r) => r[1] === String(pid));
    // the next interval (1 s, later on a loaded machine) brings the last of them
    await until(async () => {
      const k = await keyTable(frame);
      return [writer, reader].every((p) => num(rowOf(k, p)?.[3] ?? '0') >= IOS);
    }, 5_000);
    await stopAndCheck(frame, 'I/Os', 'I/O');
    // every I/O of the machine: dd's, whoever issued them, and the system's own
    const all = num(await frame.locator('#card-count .value').innerText());
    assert.ok(all >= 2 * IOS, `the panel's total ${all} holds dd's ${2 * IOS} requests`);
    const table = await keyTable(frame);
    assert.deepEqual(table.head.slice(1, 4), ['pid', 'name', 'count'], 'a per-process table names each pid');
    for (const [what, pid] of [['writes', writer], ['reads', reader]] as const) {
      const row = rowOf(table, pid);
      assert.ok(row, `no row for dd ${what} (pid ${pid}): ${JSON.stringify(table.rows)}`);
      assert.equal(row[2], 'dd');
      // A request is the process's that issues it: one the block layer dispatches later from its
      // kworker (a busy queue) is the kworker's. Exact on an idle disk; 10 % may go so, as in the kernel test.
      assert.ok(num(row[3]) <= IOS && num(row[3]) >= IOS * 0.9, `dd's ${IOS} O_DIRECT ${what}: the panel counted ${row[3]}`);
      t.diagnostic(`dd ${what} (pid ${pid}): the workload did ${IOS} O_DIRECT requests, the panel counted ${row[3]} (p50 ${row[4]}, p99 ${row[6]})`);
    }
    t.diagnostic(`all I/Os: ${all}; other rows: ${table.rows.filter((r) => r[2] !== 'dd').map((r) => `${r[2]} ${r[3]}`).join(', ')}`);
    assert.match(await frame.locator('#keys-title').innerText(), /^Per process \(\d+\)$/);
    await shoot(s, frame, 'biolatency-panel');
  });

  await step(t, s, 'On-CPU Time per Run of one process: its 700 µs burns in the 512 µs bucket', async () => {
    fs.writeFileSync(path.join(tmp, 'cpuw.c'), BURN_C);
    const cc = spawnSync('gcc', ['-O1', '-o', path.join(tmp, 'cpuw'), path.join(tmp, 'cpuw.c')], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    const w = spawn(path.join(tmp, 'cpuw'), [String(ROUNDS)], { stdio: ['pipe', 'pipe', 'ignore'] });
    t.after(() => w.kill('SIGKILL'));
    let out = '';
    w.stdout.on('data', (d) => (out += d));
    await openPanel(s, 'eBPF: Show On-CPU Time per Run', 'One process', { pid: w.pid!, comm: 'cpuw' });
    const frame = await s.webviewFrame(`On-CPU Time per Run: pid ${w.pid}`);
    await frame.locator('#status').filter({ hasText: `Tracing pid ${w.pid}` }).waitFor({ timeout: 15_000 });
    const started = Date.now();
    w.stdin.write('g');
    assert.ok(await waitFor(() => out.includes('done'), 30_000), 'the workload finished');
    const ms = Date.now() - started;
    const count = async () => num(await frame.locator('#card-count .value').innerText());
    await until(async () => (await count()) >= ROUNDS, 10_000);
    await frame.waitForTimeout(1200);
    await stopAndCheck(frame, 'runs', 'run');
    const runs = await count();
    const buckets = await histogramBuckets(frame);
    const inSlice = [...buckets].filter(([range]) => range.startsWith('512 µs')).reduce((a, [, n]) => a + n, 0);
    const longer = [...buckets].filter(([range]) => usOf(range) >= 1024).reduce((a, [, n]) => a + n, 0);
    // Each burn is one run that its sleep ends; on a busy machine a preemption cuts it in pieces
    // (short runs, one more each): the kernel test's bounds, ≥ 90 % of the rounds counted and at
    // least half of them whole in 512-1023 µs, and no run much longer than the burn.
    assert.ok(runs >= ROUNDS * 0.9, `${ROUNDS} burns of 700 µs: the panel counted ${runs} runs`);
    assert.ok(inSlice >= ROUNDS * 0.5 && inSlice <= ROUNDS, `${ROUNDS} burns of 700 µs: ${inSlice} runs in 512 µs – 1.02 ms (${JSON.stringify([...buckets])})`);
    assert.ok(longer <= runs * 0.05, `${longer} of ${runs} runs over 1023 µs, the burn is 700 µs`);
    t.diagnostic(`cpuw: ${ROUNDS} burns of 700 µs in ${ms} ms; the panel counted ${runs} runs, ${inSlice} in 512 µs – 1.02 ms, ${longer} longer; p50 ${await frame.locator('#card-p50 .value').innerText()}`);
    await shoot(s, frame, 'cpudist-panel');
    w.stdin.end();
  });

  await step(
    t,
    s,
    'On-CPU Time per Run of a container: "A container…" lists it by name and image; its busy tasks\' runs are counted, a sleeping one\'s are not',
    async () => {
      const name = (what: string) => `ebpf-studio-kp-${process.pid}-${what}`;
      t.after(() => void podman(['rm', '-f', '-t', '0', name('busy'), name('idle')], 30_000));
      const run = (what: string, script: string) => podman(['run', '-d', '--network', 'none', '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096', '--name', name(what), IMAGE, 'sh', '-c', script], 60_000);
      for (const [what, script] of [['busy', 'for i in 1 2; do (while :; do :; done) & done; wait'], ['idle', 'exec sleep 300']]) {
        const r = run(what, script);
        assert.equal(r.status, 0, r.stderr);
      }
      const count = async (frame: Frame) => num(await frame.locator('#card-count .value').innerText());
      const panel = async (what: string) => {
        await s.runCommandFromPalette('View: Close All Editors');
        await s.runCommandAndPick('eBPF: Show On-CPU Time per Run', 'A container');
        await s.page.locator('.quick-input-widget .quick-input-title', { hasText: ': container' }).waitFor({ timeout: 15_000 });
        const rows = await s.quickPickItems();
        const row = rows.find((r) => r.includes(name(what)));
        assert.ok(row?.includes(IMAGE) && /podman/.test(row), `the container's row names it, its image and runtime: ${JSON.stringify(rows)}`);
        await s.pickQuickPickItem(name(what));
        await s.pickQuickPickItem('Microseconds');
        const frame = await s.webviewFrame(`On-CPU Time per Run: container ${name(what)}`);
        await frame.locator('#status').filter({ hasText: `Tracing container ${name(what)}` }).waitFor({ timeout: 15_000 });
        await frame.waitForTimeout(3000);
        await frame.locator('#stop').click();
        await frame.locator('#status').filter({ hasText: /Stopped/ }).waitFor({ timeout: 10_000 });
        return { frame, runs: await count(frame) };
      };
      const busy = await panel('busy');
      assert.ok(busy.runs > 20, `two busy loops on two CPUs for 3 s: ${busy.runs} runs counted`);
      await shoot(s, busy.frame, 'cpudist-container-panel');
      const idle = await panel('idle');
      t.diagnostic(`container ${name('busy')}: ${busy.runs} runs in ~3 s; ${name('idle')} (sleeping): ${idle.runs}`);
      assert.ok(idle.runs <= 2, `a sleeping container runs on no CPU: ${idle.runs} runs`);
    },
    containerPrep().skip,
  );

  await step(t, s, 'TCP Connect Latency per remote address: every connect to the listener, its address once', async () => {
    const server = net.createServer((c) => c.destroy());
    await new Promise<void>((r) => server.listen(0, ADDR, r));
    t.after(() => server.close());
    const port = (server.address() as net.AddressInfo).port;
    await openPanel(s, 'eBPF: Show TCP Connect Latency', 'Per remote address');
    const frame = await s.webviewFrame('TCP Connect Latency: whole system, per remote address');
    await frame.locator('#status').filter({ hasText: 'Tracing whole system, per remote address' }).waitFor({ timeout: 15_000 });
    const own: number[] = [];
    for (let i = 0; i < CONNECTS; i++) {
      const t0 = process.hrtime.bigint();
      await new Promise<void>((resolve, reject) => {
        const c = net.connect({ host: ADDR, port }, () => {
          own.push(Number(process.hrtime.bigint() - t0) / 1000);
          c.destroy();
          resolve();
        });
        c.on('error', reject);
      });
    }
    const rowOf = (k: { rows: string[][] }) => k.rows.find((r) => r[1] === ADDR);
    await until(async () => num(rowOf(await keyTable(frame))?.[2] ?? '0') >= CONNECTS, 5_000);
    await stopAndCheck(frame, 'connects', 'connect');
    const table = await keyTable(frame);
    // an address's name is its own text: no column repeating it
    assert.deepEqual(table.head.slice(1, 3), ['address', 'count'], `the key table's columns: ${table.head.join(' | ')}`);
    const row = rowOf(table);
    assert.ok(row, `no row for ${ADDR}: ${JSON.stringify(table.rows)}`);
    assert.equal(row.filter((c) => c === ADDR).length, 1, `the address shown once: ${row.join(' | ')}`);
    assert.equal(num(row[2]), CONNECTS, `the test's ${CONNECTS} connects to ${ADDR}`);
    own.sort((a, b) => a - b);
    const p50 = row[3];
    const p50us = usOf(p50);
    // the handshake happens inside each connect: its median is below the client's own (which adds Node's event loop)
    assert.ok(p50us <= 2 * own[own.length >> 1] + 1, `median handshake ${p50}, the client's own connect ${own[own.length >> 1].toFixed(1)} µs`);
    assert.match(await frame.locator('#keys-title').innerText(), /^Per remote address \(\d+\)$/);
    // a clicked row opens its own histogram across the whole (narrower) table
    await frame.locator(`#key-table tr.key-row[data-key]`).filter({ hasText: ADDR }).click();
    await frame.locator('#key-table canvas.key-histogram').waitFor({ timeout: 5_000 });
    assert.equal(await frame.locator('#key-table td[colspan]').getAttribute('colspan'), String(table.head.length));
    assert.deepEqual((await keyTable(frame)).head, table.head, 'the expanded table has the same columns');
    t.diagnostic(`${CONNECTS} connects to ${ADDR}: the panel counted ${row[2]}, p50 ${p50} (the client's own connect, median ${own[own.length >> 1].toFixed(1)} µs)`);
    await shoot(s, frame, 'tcplat-panel');
  });
});
