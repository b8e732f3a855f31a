// Every saved session file the editor reads (the custom editor, the Sessions view's scan of the
// workspace, the JVM timeline's import) comes through here: size checked before the bytes are
// read, at most the limit read, and the JSON's nesting and size checked before it is parsed
// (../../sys/sessionText.ts), so a hostile file in a cloned repository ends with an error naming
// the file and the limit. Commands: none. Context keys: none.
import path from 'node:path';
import * as vscode from 'vscode';
import { readSessionText, sessionTextOf } from '../../sys/sessionText';
import { LimitError, SESSION_LIMITS } from '../../model/readLimits';

/** A session file's text, checked against SESSION_LIMITS. */
export async function readSessionUri(uri: vscode.Uri): Promise<string> {
  if (uri.scheme === 'file') return readSessionText(uri.fsPath);
  // another file system (a remote or virtual workspace): no bounded read, so stat first
  const name = path.basename(uri.path);
  const { size } = await vscode.workspace.fs.stat(uri);
  const max = SESSION_LIMITS.maxFileBytes;
  if (size > max) throw LimitError.of('maxFileBytes', max, name, `the size of the file (${size.toLocaleString('en-US')} bytes)`);
  return sessionTextOf(await vscode.workspace.fs.readFile(uri), name);
}
