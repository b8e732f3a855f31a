// Loading a user's own BPF object runs it in the kernel with root's power, whoever wrote it.
// The editor asks once per object content (SHA-256) in a modal that says so, remembers the
// answer in globalState, and sends the hash with the request; the helper loads only bytes with
// that hash (extension/sys/userObject.ts). Used by Run BPF Program, Load and Verify, and any
// other feature that hands the helper a user's object.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';

const KEY = 'ebpfStudio.confirmedObjects';
const KEEP = 200;
let store: vscode.Memento | undefined;
const session = new Set<string>();

/** Called once at activation so confirmations survive reloads. */
export function initObjectConfirm(context: vscode.ExtensionContext): void {
  store = context.globalState;
}

function confirmed(): string[] {
  return store?.get<string[]>(KEY, []) ?? [...session];
}

export function objectSha256(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** The object's SHA-256 once the user agrees to load it as root; undefined when declined. */
export async function confirmObject(objectPath: string, action: string): Promise<string | undefined> {
  const hash = objectSha256(objectPath);
  if (session.has(hash) || confirmed().includes(hash)) return hash;
  const pick = await vscode.window.showWarningMessage(
    `${action}: load ${path.basename(objectPath)} into the kernel as root?`,
    {
      modal: true,
      detail: `A BPF program runs inside the kernel: it can read the memory of every process and kernel data, so loading it is as powerful as running it as root. Load only programs you wrote or trust. You are asked once for each build (SHA-256 ${hash.slice(0, 16)}…).`,
    },
    'Load as Root',
  );
  if (pick !== 'Load as Root') return undefined;
  session.add(hash);
  if (store) await store.update(KEY, [...confirmed().filter((h) => h !== hash), hash].slice(-KEEP));
  return hash;
}
