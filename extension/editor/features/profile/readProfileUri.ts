// Every profile file the editor opens (custom editors, Open CPU Profile, Compare, a fetched URL)
// is read here: its size checked before its bytes are read, then parsed in a worker within
// PROFILE_LIMITS (../../../sys/profileReader.ts), so a hostile file in a cloned repository costs a
// worker thread and a clear error, never the extension host. Commands: none. Context keys: none.
import path from 'node:path';
import * as vscode from 'vscode';
import { readProfile } from '../../../sys/profileReader';
import type { LoadedProfile } from '../../../sys/profileFile';
import { LimitError, PROFILE_LIMITS } from '../../../model/readLimits';

export async function readProfileUri(uri: vscode.Uri): Promise<LoadedProfile> {
  const name = path.basename(uri.fsPath);
  const { size } = await vscode.workspace.fs.stat(uri);
  const max = PROFILE_LIMITS.maxFileBytes;
  if (size > max) throw LimitError.of('maxFileBytes', max, name, `the size of the file (${size.toLocaleString('en-US')})`);
  return readProfile(await vscode.workspace.fs.readFile(uri), name);
}
