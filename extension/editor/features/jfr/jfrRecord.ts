// "Record JFR…" on a running JVM of the user's (our process picker, JVMs only; another user's JVM
// is refused by the attach path), with a duration and JFR's settings (default, profile, and on
// JDK 25 method timing and tracing of methods the user names), then the
// recording opens in the JFR editor; "Dump the Running JFR Recording…" for a JVM that already
// records continuously. The JVM is asked through its attach socket (sys/jvm/jfrRecord.ts), as
// `jcmd PID JFR.start` would. Commands: ebpfStudio.recordJfr, ebpfStudio.dumpJfr. Context keys: none.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { dumpJfr, methodFilter, recordJfr, type JfrSettings } from '../../../sys/jvm/jfrRecord';
import { pickProcess } from '../../ui/processPicker';
import { showError } from '../../ui/errors';

const DURATIONS = [10, 30, 60, 300];

async function pickJvm(command: string): Promise<{ pid: number; label: string; feature?: number } | undefined> {
  const uid = process.getuid?.() ?? 0;
  const picked = await pickProcess({ command, jvmOnly: true, refuse: (p) => (uid !== 0 && p.uid !== uid ? `a JVM of ${p.user}: only its owner may record it` : undefined) });
  if (!picked || !('process' in picked)) return undefined;
  return { pid: picked.process.pid, label: `${picked.process.jvm?.main || picked.process.comm} (pid ${picked.process.pid})`, feature: picked.process.jvm?.feature };
}

/** Where recordings go: the extension's storage (the JVM's own copy in its /tmp is removed). */
function destination(context: vscode.ExtensionContext, pid: number, what: string): string {
  const dir = path.join(context.globalStorageUri.fsPath, 'recordings');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return path.join(dir, `${what}-pid${pid}-${stamp}.jfr`);
}

/** The methods to time, as JFR's filters (Class::method, a class, @Annotation), comma-separated. */
async function askMethods(label: string): Promise<string[] | undefined> {
  const text = await vscode.window.showInputBox({
    title: `Record JFR: ${label}`,
    prompt: 'Methods to time and trace, comma-separated: com.example.Foo::parse, a class (all its methods) or @an.Annotation',
    placeHolder: 'com.example.Foo::parse, com.example.Bar::<init>',
    validateInput: (v) => {
      try {
        methodFilter(v.split(','), 'methods');
        return undefined;
      } catch (e) {
        return (e as Error).message;
      }
    },
  });
  return text === undefined ? undefined : text.split(',').map((m) => m.trim()).filter(Boolean);
}

async function record(context: vscode.ExtensionContext): Promise<void> {
  const jvm = await pickJvm('Record JFR');
  if (!jvm) return;
  const d = await vscode.window.showQuickPick(
    DURATIONS.map((s) => ({ label: s < 60 ? `${s} seconds` : `${s / 60} minute${s === 60 ? '' : 's'}`, s })),
    { title: `Record JFR: ${jvm.label}`, placeHolder: 'How long? (Cancel in the progress notification ends it early; what was recorded is kept)' },
  );
  if (!d) return;
  const settings = await vscode.window.showQuickPick(
    [
      { label: 'profile', description: 'JFR\'s profile settings: samples every 10 ms, allocations, locks over 10 ms (about 2 % overhead)', value: 'profile' as JfrSettings },
      { label: 'default', description: 'JFR\'s default settings: samples every 20 ms, low overhead (< 1 %)', value: 'default' as JfrSettings },
      // JDK 25's method timing and tracing (JEP 520): the JVM instruments the methods named
      ...((jvm.feature ?? 0) >= 25 ? [{ label: 'method timing for chosen methods', description: 'profile settings, and every call of the methods you name timed (count, min, avg, max) and traced with its stack', value: 'profile' as JfrSettings, methods: true }] : []),
    ],
    { title: `Record JFR: ${jvm.label}`, placeHolder: 'Settings' },
  );
  if (!settings) return;
  const methods = 'methods' in settings ? await askMethods(jvm.label) : undefined;
  if ('methods' in settings && !methods) return;
  const dest = destination(context, jvm.pid, 'recording');
  const file = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Recording JFR of ${jvm.label}`, cancellable: true }, async (progress, token) => {
    const stop = new AbortController();
    token.onCancellationRequested(() => stop.abort());
    const step = 100 / d.s;
    const tick = setInterval(() => progress.report({ increment: step }), 1000);
    try {
      return await recordJfr(jvm.pid, { durationS: d.s, settings: settings.value, dest, signal: stop.signal, timeoutMs: 20_000, ...(methods ? { methodTiming: methods, methodTrace: methods } : {}) });
    } finally {
      clearInterval(tick);
    }
  });
  await vscode.commands.executeCommand('vscode.openWith', vscode.Uri.file(file), 'ebpfStudio.jfrFile');
}

async function dump(context: vscode.ExtensionContext): Promise<void> {
  const jvm = await pickJvm('Dump the Running JFR Recording');
  if (!jvm) return;
  const dest = destination(context, jvm.pid, 'dump');
  const file = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Dumping the JFR recording of ${jvm.label}` }, () => dumpJfr(jvm.pid, { dest, timeoutMs: 20_000 }));
  await vscode.commands.executeCommand('vscode.openWith', vscode.Uri.file(file), 'ebpfStudio.jfrFile');
}

export function registerRecordCommands(context: vscode.ExtensionContext): void {
  const guard = (f: (c: vscode.ExtensionContext) => Promise<void>) => async () => {
    try {
      await f(context);
    } catch (e) {
      showError(e);
    }
  };
  context.subscriptions.push(vscode.commands.registerCommand('ebpfStudio.recordJfr', guard(record)), vscode.commands.registerCommand('ebpfStudio.dumpJfr', guard(dump)));
}
