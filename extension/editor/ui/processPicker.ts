// The one process picker of every command that traces a process (Profile CPU, Find Memory Leaks,
// and the JVM commands): the user's programs and JVMs first, the machine's own processes behind
// "Show all" (order: model/processPick.ts), and "Enter a pid…" always there. A pid typed into the
// filter is offered as "Use pid N" even when no listed process matches it; a pid that is not
// running (exited, mistyped) or does not qualify gets a message saying so instead of a silent return.
import * as vscode from 'vscode';
import * as proto from '../../protocol/protocol';
import { helper } from '../helperClient/helperClient';
import { checkTypedPid, GROUP_TITLES, orderProcesses, typedPid, type ProcessGroup } from '../../model/processPick';

export interface PickProcessOptions<E extends vscode.QuickPickItem> {
  /** the command's name, for messages ("Profile CPU") */
  command: string;
  /** the picker's title; default: the command's name */
  title?: string;
  placeHolder?: string;
  /** list and accept only JVMs */
  jvmOnly?: boolean;
  /** items above the processes (e.g. "Whole system") and below them (e.g. settings) */
  top?: E[];
  bottom?: E[];
  /** a process to put first (the one used last), with "last used" in its description */
  preferred?: (p: proto.ProcessInfo) => boolean;
  /** the label, description and detail of a process row; default: pid and name, user, command line */
  describe?: (p: proto.ProcessInfo) => Pick<vscode.QuickPickItem, 'label' | 'description' | 'detail'>;
  /** why a listed process cannot be traced by this command (e.g. a JVM without USDT probes): shown on its row and said when it is picked */
  refuse?: (p: proto.ProcessInfo) => string | undefined;
}

export type PickProcessResult<E> = { process: proto.ProcessInfo } | { extra: E } | undefined;

interface Row extends vscode.QuickPickItem {
  process?: proto.ProcessInfo;
  extra?: unknown;
  showAll?: boolean;
  askPid?: boolean;
}

function listProcesses(jvmOnly: boolean): Promise<proto.ProcessInfo[]> {
  return Promise.resolve(
    vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: jvmOnly ? 'Listing JVMs…' : 'Listing processes…' }, () => helper().request(proto.listProcesses, jvmOnly ? { jvmOnly: true } : {})),
  );
}

function defaultDescribe(p: proto.ProcessInfo): Pick<vscode.QuickPickItem, 'label' | 'description' | 'detail'> {
  // a process in a container says which (runtime, name, image): its pid alone means little there
  const where = p.container ? ` · ${p.container}` : '';
  if (p.jvm) return { label: `$(coffee) ${p.pid}  ${p.jvm.main}`, description: `JVM · ${p.user}${where}`, detail: p.jvm.javaHome };
  return { label: `${p.pid}  ${p.comm}`, description: `${p.user}${where}`, detail: p.cmdline.join(' ').slice(0, 200) || undefined };
}

/** The editor's own processes: this extension host and its ancestors (the editor server, the shell that started it…). */
function selfPids(procs: proto.ProcessInfo[]): number[] {
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const out: number[] = [];
  for (let pid: number | undefined = process.pid; pid && pid > 1 && !out.includes(pid); pid = byPid.get(pid)?.ppid) out.push(pid);
  return out;
}

/** A picked process, or the message saying why this command cannot trace it. */
function accept<E>(p: proto.ProcessInfo, o: PickProcessOptions<vscode.QuickPickItem>): PickProcessResult<E> {
  const why = o.refuse?.(p);
  if (why) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${o.command}: ${why}`);
    return undefined;
  }
  return { process: p };
}

/** Checks a typed pid against a fresh listing (a program may have started or exited since the list opened). */
async function resolvePid<E>(text: string, o: PickProcessOptions<vscode.QuickPickItem>): Promise<PickProcessResult<E>> {
  const check = checkTypedPid(text, await listProcesses(false), { jvmOnly: o.jvmOnly, command: o.command });
  if (!check.ok) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${o.command}: ${check.message}`);
    return undefined;
  }
  return accept(check.process, o);
}

export async function pickProcess<E extends vscode.QuickPickItem>(o: PickProcessOptions<E>): Promise<PickProcessResult<E>> {
  const procs = await listProcesses(Boolean(o.jvmOnly));
  const ordered = orderProcesses(procs, { uid: process.getuid?.() ?? 0, roots: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath), selfPids: selfPids(procs) });
  const preferred = o.preferred ? ordered.find((x) => o.preferred!(x.process)) : undefined;
  const hidden = ordered.filter((x) => x.group === 'system' && x !== preferred).length;
  const describeRow = o.describe ?? defaultDescribe;
  const describe = (p: proto.ProcessInfo): Pick<vscode.QuickPickItem, 'label' | 'description' | 'detail'> => {
    const d = describeRow(p);
    const why = o.refuse?.(p);
    return why ? { ...d, label: `$(circle-slash) ${d.label.replace(/^\$\([a-z-]+\)\s*/, '')}`, detail: `Cannot trace: ${why}` } : d;
  };

  const rows = (showAll: boolean, filter: string): Row[] => {
    const out: Row[] = [];
    if (preferred) {
      const d = describe(preferred.process);
      out.push({ ...d, description: [d.description, 'last used'].filter(Boolean).join(' · '), process: preferred.process });
    }
    out.push(...(o.top ?? []).map((e) => ({ ...e, extra: e })));
    let group: ProcessGroup | undefined;
    for (const x of ordered) {
      if (x === preferred || (x.group === 'system' && !showAll)) continue;
      if (x.group !== group) out.push({ label: GROUP_TITLES[x.group], kind: vscode.QuickPickItemKind.Separator });
      group = x.group;
      out.push({ ...describe(x.process), process: x.process });
    }
    if (!showAll && hidden) out.push({ label: `$(eye) Show all (${hidden} system and helper process${hidden === 1 ? '' : 'es'})`, showAll: true, alwaysShow: true });
    const pid = typedPid(filter);
    out.push(
      pid !== undefined && !ordered.some((x) => x.process.pid === pid && (showAll || x.group !== 'system'))
        ? { label: `$(edit) Use pid ${pid}`, description: 'not in this list: checked when you press Enter', askPid: true, alwaysShow: true }
        : { label: '$(edit) Enter a pid…', askPid: true, alwaysShow: true },
    );
    out.push(...(o.bottom ?? []).map((e) => ({ ...e, extra: e })));
    return out;
  };

  const qp = vscode.window.createQuickPick<Row>();
  qp.title = o.title ?? o.command;
  qp.placeholder = o.placeHolder ?? (o.jvmOnly ? 'Pick a JVM, or type its pid' : 'Pick a process, or type its pid');
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  let showAll = false;
  qp.items = rows(showAll, '');
  const chosen = await new Promise<{ row?: Row; value: string } | undefined>((resolve) => {
    qp.onDidChangeValue((v) => {
      qp.items = rows(showAll, v);
    });
    qp.onDidAccept(() => {
      const row = qp.selectedItems[0] ?? qp.activeItems[0];
      if (row?.showAll) {
        showAll = true;
        qp.items = rows(showAll, qp.value);
        return;
      }
      resolve({ row, value: qp.value });
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  if (!chosen) return undefined;
  const { row, value } = chosen;
  if (row?.process) return accept(row.process, o);
  if (row?.extra) return { extra: row.extra as E };
  // "Use pid N", or Enter on a filter that matched nothing: the typed pid
  if (typedPid(value) !== undefined && (row?.askPid || !row)) return resolvePid<E>(value, o);
  if (!row?.askPid) return undefined;
  const text = await vscode.window.showInputBox({
    title: o.command,
    prompt: o.jvmOnly ? 'Process id of a running JVM' : 'Process id',
    validateInput: (v) => (typedPid(v) !== undefined && Number(v) > 0 ? undefined : 'A pid is a positive whole number'),
  });
  if (!text) return undefined;
  return resolvePid<E>(text, o);
}
