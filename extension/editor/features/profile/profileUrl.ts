// Commands: ebpfStudio.openProfileUrl ("Open CPU Profile from URL…": fetches a pprof endpoint —
// the eBPF Studio agent's /debug/pprof/profile, a Go service's net/http/pprof, a Parca or Pyroscope
// export — keeps the bytes under the extension's storage, opens them in the flame graph through
// ebpfStudio.openProfile (so workspace lines get the same CodeLens and heat as a local profile),
// records it in the Sessions view, and offers "Compare with…" against a local profile session).
// A 401 asks for a bearer token once and keeps it in SecretStorage per origin. Context keys: none.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { readProfile } from '../../../sys/profileReader';
import { LimitError, PROFILE_LIMITS } from '../../../model/readLimits';
import { makeSession } from '../../../model/sessionFile';
import { unwindSummary } from '../../../model/unwindText';
import { finishedSessions, loadSession, recordSession } from '../../sessions/sessionStore';
import { errorText, showError } from '../../ui/errors';
import { compareProfiles } from './profileDiff';

const LAST_URL = 'ebpfStudio.profileUrl.last';
const DEFAULT_URL = 'http://127.0.0.1:9435/debug/pprof/profile?seconds=10';
/** a profile URL answers after its ?seconds, plus time to symbolize */
const EXTRA_WAIT_MS = 60_000;

/** The URL the user typed, checked: http(s) only; "seconds" read for the wait. */
export function checkProfileUrl(text: string): { url: URL; seconds: number } | string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return 'not a URL: give e.g. http://127.0.0.1:9435/debug/pprof/profile?seconds=10';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `only http:// and https:// URLs can be fetched, not ${url.protocol}`;
  const s = url.searchParams.get('seconds');
  const seconds = s === null ? 30 : Number(s);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 3600) return `seconds=${s} must be a number from 1 to 3600`;
  return { url, seconds };
}

/** A short file-name-safe label: host_port-path-time. */
function fileLabel(url: URL, when: Date): string {
  const stamp = when.toISOString().replace(/[:.]/g, '-').replace(/Z$/, '');
  return `${url.host.replace(/[^A-Za-z0-9.-]/g, '_')}${url.pathname.replace(/[^A-Za-z0-9]+/g, '-')}${stamp}.pb.gz`.replace(/-+/g, '-');
}

/**
 * A response's body, at most `max` bytes: an error page is cut there; a profile past them (or
 * whose Content-Length says so) aborts the request, so an endpoint cannot fill the extension
 * host's memory.
 */
async function readBody(res: Response, max: number, past: 'cut' | 'refuse', url: URL, abort: AbortController): Promise<Uint8Array> {
  const refuse = (n: number) => {
    abort.abort();
    return LimitError.of('maxFileBytes', max, url.host, `the answer's size (${n.toLocaleString('en-US')} bytes or more)`);
  };
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (past === 'refuse' && declared > max) throw refuse(declared);
  if (!res.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    size += r.value.length;
    if (size <= max) {
      chunks.push(r.value);
      continue;
    }
    if (past === 'refuse') throw refuse(size);
    chunks.push(r.value.subarray(0, r.value.length - (size - max)));
    void reader.cancel();
    break;
  }
  return Buffer.concat(chunks);
}

async function fetchProfile(url: URL, seconds: number, token: string | undefined, cancel: vscode.CancellationToken): Promise<{ status: number; bytes?: Uint8Array; text?: string }> {
  const abort = new AbortController();
  const sub = cancel.onCancellationRequested(() => abort.abort());
  const timer = setTimeout(() => abort.abort(), seconds * 1000 + EXTRA_WAIT_MS);
  try {
    const res = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {}, signal: abort.signal });
    if (!res.ok) return { status: res.status, text: new TextDecoder().decode(await readBody(res, 4096, 'cut', url, abort)).slice(0, 500) };
    return { status: res.status, bytes: await readBody(res, PROFILE_LIMITS.maxFileBytes, 'refuse', url, abort) };
  } catch (e) {
    if (e instanceof LimitError) throw e;
    if (abort.signal.aborted) throw new Error(cancel.isCancellationRequested ? 'cancelled' : `no answer within ${seconds + EXTRA_WAIT_MS / 1000} s`);
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`${url.host} did not answer (${cause?.code ?? cause?.message ?? errorText(e)}): is the agent running there, and is the address reachable from this machine?`);
  } finally {
    clearTimeout(timer);
    sub.dispose();
  }
}

/** Fetches, stores and opens one profile URL; returns the file it was stored in. */
export async function openProfileUrl(context: vscode.ExtensionContext, text: string): Promise<vscode.Uri | undefined> {
  const checked = checkProfileUrl(text);
  if (typeof checked === 'string') throw new Error(checked);
  const { url, seconds } = checked;
  const secretKey = `ebpfStudio.profileUrl.token:${url.origin}`;
  let token = await context.secrets.get(secretKey);
  const startedAt = new Date();
  const got = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `eBPF Studio: profiling through ${url.host} for ${seconds} s…`, cancellable: true },
    async (_p, cancel) => {
      let r = await fetchProfile(url, seconds, token, cancel);
      if (r.status === 401) {
        token = await vscode.window.showInputBox({ title: `${url.origin} asks for a bearer token`, prompt: 'The token the agent was configured with (auth.bearerTokenFile). Kept in VS Code\'s secret storage for this address.', password: true, ignoreFocusOut: true });
        if (!token) return undefined;
        r = await fetchProfile(url, seconds, token, cancel);
        if (r.status !== 401) await context.secrets.store(secretKey, token);
      }
      return r;
    },
  );
  if (!got) return undefined;
  if (!got.bytes) throw new Error(`${url.href} answered HTTP ${got.status}${got.text ? `: ${got.text.trim()}` : ''}`);
  // Parse here first: a wrong URL (an HTML page, /metrics) is said as such, not as a broken file.
  const name = `${url.host}${url.pathname}`;
  let loaded;
  try {
    loaded = await readProfile(got.bytes, name);
  } catch (e) {
    if (e instanceof LimitError) throw new Error(`${url.href}: ${e.message}`);
    throw new Error(`${url.href} did not return a profile (pprof, folded stacks or speedscope): ${errorText(e)}`);
  }
  const dir = path.join(context.globalStorageUri.fsPath, 'remote-profiles');
  fs.mkdirSync(dir, { recursive: true });
  const file = vscode.Uri.file(path.join(dir, fileLabel(url, startedAt)));
  await vscode.workspace.fs.writeFile(file, got.bytes);
  await vscode.commands.executeCommand('ebpfStudio.openProfile', file);
  const title = `CPU: ${name} (${startedAt.toLocaleTimeString()})`;
  const flame = { ...loaded.flame, name: title };
  // Kept in the Sessions view, where Compare With… works on it too; the flame graph is open already.
  await recordSession(makeSession('profile', title, { profile: flame, warnings: [], unwind: unwindSummary(loaded.result?.unwind) }, startedAt, new Date())).catch(() => undefined);
  void vscode.window.showInformationMessage(`eBPF Studio: opened ${loaded.flame.total} samples from ${url.host}.`, 'Compare with…').then(async (choice) => {
    if (choice) await compareWithLocal(file).catch(showError);
  });
  return file;
}

/** Diffs a fetched profile against a local profile session (the local one is the base). */
export async function compareWithLocal(remote: vscode.Uri): Promise<void> {
  const local = finishedSessions().filter((s) => s.tracer === 'profile' && !s.title.includes('://') && !/^CPU: [^ ]+\/debug\/pprof/.test(s.title));
  const items: (vscode.QuickPickItem & { key?: string })[] = local.map((s) => ({ label: s.title, description: new Date(s.startedAt).toLocaleString(), key: s.key }));
  items.push({ label: '$(file) Choose a profile file…' });
  const pick = await vscode.window.showQuickPick(items, { title: 'Compare the fetched profile with which local profile? (the local one is the base)' });
  if (!pick) return;
  if (pick.key) {
    const doc = loadSession(pick.key);
    if (doc?.tracer !== 'profile') throw new Error(`the data of "${pick.label}" is no longer stored: profile again, or choose a file`);
    await compareProfiles({ profile: doc.data.profile, label: pick.label }, remote);
    return;
  }
  const uri = (await vscode.window.showOpenDialog({ title: 'Base profile', canSelectMany: false }))?.[0];
  if (uri) await compareProfiles(uri, remote);
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.openProfileUrl', async (given?: string) => {
      try {
        const text =
          given ??
          (await vscode.window.showInputBox({
            title: 'Open CPU Profile from URL',
            prompt: 'A pprof endpoint: the eBPF Studio agent, a Go service (net/http/pprof), a Parca or Pyroscope export',
            value: context.globalState.get<string>(LAST_URL, DEFAULT_URL),
            ignoreFocusOut: true,
            validateInput: (v) => {
              const c = checkProfileUrl(v);
              return typeof c === 'string' ? c : undefined;
            },
          }));
        if (!text) return undefined;
        await context.globalState.update(LAST_URL, text);
        return (await openProfileUrl(context, text))?.fsPath;
      } catch (e) {
        showError(new Error(`Open CPU Profile from URL: ${errorText(e)}`));
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.compareProfileUrl', async (remote?: vscode.Uri) => {
      try {
        const uri = remote ?? (await vscode.window.showOpenDialog({ title: 'The fetched (remote) profile', canSelectMany: false, defaultUri: vscode.Uri.file(path.join(context.globalStorageUri.fsPath, 'remote-profiles')) }))?.[0];
        if (uri) await compareWithLocal(uri);
      } catch (e) {
        showError(e);
      }
    }),
  );
}
