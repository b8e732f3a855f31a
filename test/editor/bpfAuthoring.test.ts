// BPF authoring in a real VS Code (code-server), fresh window: opening a .bpf.c starts the
// extension and its language server without any command (hover on a helper shows libbpf's docs),
// "task->" completes task_struct's members from the kernel's types, a misspelt helper is an error
// in Problems at its line naming it, New BPF Project → Run BPF Loader builds both halves, shows the
// loader's output and its programs, and the map view's Stop ends the loader within 2 s, and Run
// bpftrace Script shows bpftrace's output and then its maps (hist() as a histogram, each key once).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { EditorSession, skipReason } from './codeServer';
import { editorOf, openWorkspaceFile, problemRows } from './editorDom';
import { kernelSkipReason } from '../helpers';

const PROGRAM = `#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp/syscalls/sys_enter_execve")
int on_exec(void *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	return id == 0 && task != 0; /* COMPLETE-HERE */
}
`;

const BT = `tracepoint:syscalls:sys_exit_read { @bytes = hist(args->ret); @reads = count(); }
tracepoint:sched:sched_process_exec { @execs[comm] = count(); }
interval:s:1 { print(@execs); }
interval:s:3 { exit(); }
`;

test('BPF authoring in a fresh editor window', { skip: skipReason(), timeout: 600_000 }, async (t) => {
  const s = await EditorSession.start({ files: { 'probe.bpf.c': PROGRAM, 'reads.bt': BT }, settings: { 'terminal.integrated.gpuAcceleration': 'off' } });
  try {
    await s.dismissStartupEditors();

    await t.test('hover on a helper works without running any command', async () => {
      await openWorkspaceFile(s, 'probe.bpf.c');
      const editor = editorOf(s, 'probe.bpf.c');
      const token = editor.locator('.view-lines span span', { hasText: 'bpf_get_current_pid_tgid' }).first();
      await token.waitFor({ state: 'visible', timeout: 15_000 });
      const hover = s.page.locator('.monaco-hover', { hasText: 'Get the current pid and tgid' });
      // The server starts when the file opens; ask for the hover (Ctrl+K Ctrl+I at the token, as
      // a keyboard user would; a mouse hover is the same request) until it answers.
      const deadline = Date.now() + 60_000;
      for (;;) {
        await token.click();
        await s.page.keyboard.press('Control+K');
        await s.page.keyboard.press('Control+I');
        try {
          await hover.first().waitFor({ state: 'visible', timeout: 3000 });
          break;
        } catch (e) {
          if (Date.now() > deadline) {
            await s.screenshot('bpf-hover-missing');
            s.saveLogs('bpf-hover-missing-logs');
            throw new Error('no helper hover within 60 s of opening probe.bpf.c', { cause: e });
          }
          await s.page.keyboard.press('Escape');
        }
      }
      await s.screenshot('bpf-hover');
    });

    await t.test('"task->" completes task_struct members from the kernel\'s types', async () => {
      const editor = editorOf(s, 'probe.bpf.c');
      await editor.locator('.view-lines span span', { hasText: 'COMPLETE-HERE' }).first().click();
      await s.page.keyboard.press('End');
      await s.page.keyboard.press('Enter');
      await s.page.keyboard.type('task->');
      for (const [typed, member] of [['tgi', 'tgid'], ['com', 'comm'], ['pi', 'pid']]) {
        await s.page.keyboard.type(typed);
        const item = s.page.locator('.suggest-widget .monaco-list-row .label-name', { hasText: new RegExp(`^${member}$`) });
        try {
          await item.first().waitFor({ state: 'visible', timeout: 30_000 });
        } catch (e) {
          await s.screenshot(`bpf-complete-${member}-missing`);
          throw new Error(`"task->${typed}" did not offer ${member}`, { cause: e });
        }
        for (let i = 0; i < typed.length; i++) await s.page.keyboard.press('Backspace');
      }
      await s.screenshot('bpf-complete-task');
      // Take the typed line out again (the next step saves the file).
      await s.page.keyboard.press('Escape');
      await s.page.keyboard.press('Control+Shift+K');
      await s.page.keyboard.press('Control+Home'); // back to the top, where the helper call is
    });

    await t.test('a misspelt helper is an error in Problems at its line, naming the helper', async () => {
      // Misspell the helper as a user would: select the name and type over it; the build saves.
      const editor = editorOf(s, 'probe.bpf.c');
      const retype = async (from: string, to: string) => {
        // Click into the name (as the hover step does), Ctrl+D selects the word, typing replaces it.
        await editor.locator('.view-lines span span', { hasText: from }).first().click();
        await s.page.keyboard.press('Control+D');
        await s.page.keyboard.type(to);
        await s.page.keyboard.press('Escape');
        const deadline = Date.now() + 10_000;
        while (!(await editor.locator('.view-lines').innerText()).replace(/\u00a0/g, ' ').includes(`= ${to}()`) && Date.now() < deadline) await s.page.waitForTimeout(200);
        assert.ok((await editor.locator('.view-lines').innerText()).replace(/\u00a0/g, ' ').includes(`= ${to}()`), `the editor does not show ${to}()`);
      };
      await retype('bpf_get_current_pid_tgid', 'bpf_get_current_pid_tgi');
      const line = PROGRAM.split('\n').findIndex((l) => l.includes('bpf_get_current_pid_tgid()')) + 1;
      await s.runCommandFromPalette('eBPF: Build BPF Program');
      const row = s.page.locator('.markers-panel .monaco-list-row', { hasText: 'bpf_get_current_pid_tgi' }).first();
      const deadline = Date.now() + 60_000;
      for (;;) {
        await s.runCommandFromPalette('View: Focus Problems (Errors, Warnings, Infos)');
        try {
          await row.waitFor({ timeout: 3000 });
          break;
        } catch (e) {
          if (Date.now() > deadline) throw new Error(`no error for the misspelt helper in Problems; rows: ${(await problemRows(s)).join(' || ')}`, { cause: e });
        }
      }
      const rows = (await problemRows(s)).filter((r) => r.includes("'bpf_get_current_pid_tgi'"));
      const errors = rows.filter((r) => /^Error/.test(r));
      assert.equal(errors.length, 1, `one error, listed once: ${rows.join(' || ')}`);
      assert.match(errors[0], new RegExp(`\\[Ln ${line}, Col \\d+\\]`));
      assert.match(errors[0], /Did you mean 'bpf_get_current_pid_tgid'\?/);
      await s.screenshot('bpf-typo-problems');
      await retype('bpf_get_current_pid_tgi', 'bpf_get_current_pid_tgid');
      await s.runCommandFromPalette('File: Save');
    });

    await t.test(
      'New BPF Project → Run BPF Loader shows the minimal example\'s output',
      { skip: kernelSkipReason() ?? (spawnSync('make', ['--version']).status !== 0 ? 'make is not installed' : undefined) },
      async () => {
        await s.runCommandFromPalette('eBPF: New BPF Project');
        await s.pickQuickPickItem(/^minimal/);
        // code-server's folder dialog is a quick input holding a path: give the workspace folder.
        const input = s.page.locator('.quick-input-widget .quick-input-box input');
        await input.waitFor({ state: 'visible', timeout: 15_000 });
        // The dialog sets its own default path once it has listed the folder, which can overwrite
        // what was typed before: type again until the path stays.
        for (let i = 0; i < 20; i++) {
          await input.fill(`${s.workspace}/`);
          await s.page.waitForTimeout(300);
          if ((await input.inputValue()) === `${s.workspace}/`) break;
        }
        await s.page.keyboard.press('Enter');
        // Then the folder name (default "minimal").
        await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'folder name' }).waitFor({ timeout: 15_000 });
        await s.page.keyboard.press('Enter');
        const dir = path.join(s.workspace, 'minimal');
        const deadline = Date.now() + 60_000;
        while (!fs.existsSync(path.join(dir, 'minimal.bpf.c')) && Date.now() < deadline) await s.page.waitForTimeout(250);
        assert.ok(fs.existsSync(path.join(dir, 'Makefile')), 'the project was not created');
        await s.page.locator('.tabs-container .tab', { hasText: 'minimal.bpf.c' }).waitFor({ timeout: 30_000 });

        await s.runCommandFromPalette('eBPF: Run BPF Loader');
        const confirm = s.page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Run as Root' });
        await confirm.waitFor({ state: 'visible', timeout: 120_000 }); // after make built both halves
        assert.ok(fs.existsSync(path.join(dir, 'minimal')), 'make did not build the loader');
        await confirm.click();
        const terminal = s.page.locator('.terminal-wrapper .xterm-rows', { hasText: /execve calls: \d+/ });
        const until = Date.now() + 60_000;
        for (;;) {
          spawnSync('/bin/true');
          try {
            await terminal.first().waitFor({ state: 'visible', timeout: 2000 });
            break;
          } catch (e) {
            if (Date.now() > until) {
              await s.screenshot('bpf-loader-missing');
              throw new Error('the loader\'s output did not appear in the terminal within 60 s', { cause: e });
            }
          }
        }
        await s.screenshot('bpf-loader-terminal');
        // The loader view lists the program it loaded and its attach point; its Stop ends the loader.
        const view = await s.webviewFrame('BPF loader: minimal', 30_000);
        await view.locator('td', { hasText: 'tp/syscalls/sys_enter_execve' }).first().waitFor({ timeout: 15_000 });
        assert.match(await view.locator('body').innerText(), /count_execve\s+tp\/syscalls\/sys_enter_execve\s+yes/);
        const t0 = Date.now();
        await view.locator('button', { hasText: 'Stop' }).click();
        await s.page.locator('.terminal-wrapper .xterm-rows', { hasText: /exited with code 0|stopped by SIG/ }).first().waitFor({ timeout: 10_000 });
        const stopMs = Date.now() - t0;
        assert.ok(stopMs < 2000, `Stop took ${stopMs} ms to end the loader`);
        await s.screenshot('bpf-loader-stopped');
      },
    );

    await t.test(
      'Run bpftrace Script: output in a terminal, then hist() as a histogram in the map view',
      { skip: kernelSkipReason() ?? (spawnSync('bpftrace', ['--version']).status !== 0 ? 'bpftrace is not installed' : undefined) },
      async () => {
        await s.runCommandFromPalette('View: Close All Editors');
        await openWorkspaceFile(s, 'reads.bt');
        await s.page.locator('.tabs-container .tab.active', { hasText: 'reads.bt' }).waitFor({ timeout: 15_000 });
        await s.runCommandFromPalette('eBPF: Run bpftrace Script');
        const confirm = s.page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Run as Root' });
        await confirm.waitFor({ state: 'visible', timeout: 30_000 });
        await confirm.click();
        await s.page.locator('.terminal-wrapper .xterm-rows', { hasText: /Attaching \d+ probes/ }).first().waitFor({ timeout: 60_000 });
        const frame = await s.webviewFrame('bpftrace: reads.bt', 60_000);
        await frame.locator('canvas[data-total]').first().waitFor({ timeout: 15_000 });
        const total = Number(await frame.locator('canvas[data-total]').first().getAttribute('data-total'));
        assert.ok(total > 0, `the @bytes histogram is empty (total ${total})`);
        const body = await frame.locator('body').innerText();
        assert.match(body, /@bytes/);
        // @execs was printed every second and again at exit: the view has each key once.
        const execRows = await frame.locator('section[data-map="@execs"] tr').evaluateAll((trs) => trs.slice(1).map((tr) => tr.querySelector('td')?.textContent ?? ''));
        assert.ok(execRows.length > 0, body);
        assert.equal(new Set(execRows).size, execRows.length, `keys repeat in the map view: ${execRows.join(', ')}`);
        await s.screenshot('bpftrace-histogram');
      },
    );
  } catch (e) {
    s.saveLogs('bpf-authoring-logs');
    throw e;
  } finally {
    await s.close();
  }
});
