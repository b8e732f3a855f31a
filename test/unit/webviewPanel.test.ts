// The webview panels' handshake (extension/editor/ui/webviewPanel.ts), on a stand-in panel that
// records what is posted: nothing reaches a view before it says ready, queued posts then go out in
// order after the view's first messages, a handler's error is shown, and a disposed panel posts
// nothing and calls no handler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';

const vscode = installVscodeMock();
const { fillViewPanel } = require('../../extension/editor/ui/webviewPanel') as typeof import('../../extension/editor/ui/webviewPanel');

function fakePanel() {
  const fromView = new vscode.EventEmitter<unknown>();
  const disposed = new vscode.EventEmitter<void>();
  const posted: unknown[] = [];
  const panel = {
    title: '',
    webview: {
      options: {},
      html: '',
      cspSource: 'vscode-resource:',
      asWebviewUri: (u: unknown) => u,
      postMessage: async (m: unknown) => {
        posted.push(m);
        return true;
      },
      onDidReceiveMessage: fromView.event,
    },
    onDidDispose: disposed.event,
  };
  return { panel, posted, say: (m: unknown) => fromView.fire(m), dispose: () => disposed.fire() };
}

const tick = () => new Promise((r) => setImmediate(r));

test('posts wait for ready; the view\'s first messages go before the queue; ready is not a handler message', async () => {
  const f = fakePanel();
  const view = fillViewPanel<{ type: string; n?: number }, { type: string }>(fakeContext('/tmp') as never, f.panel as never, 'javaGc', 'T', 'key1');
  assert.match(f.panel.webview.html, /data-session-key="key1"/);
  const seen: string[] = [];
  view.onMessage((m) => void seen.push(m.type));
  view.onReady(() => [{ type: 'init' }]);
  view.post({ type: 'update', n: 1 });
  view.post({ type: 'update', n: 2 });
  assert.equal(view.ready, false);
  assert.deepEqual(f.posted, [], 'nothing is posted before the view is ready');
  f.say({ type: 'ready' });
  await tick();
  assert.equal(view.ready, true);
  assert.deepEqual(f.posted, [{ type: 'init' }, { type: 'update', n: 1 }, { type: 'update', n: 2 }]);
  view.post({ type: 'update', n: 3 });
  assert.deepEqual(f.posted.at(-1), { type: 'update', n: 3 }, 'once ready, posts go out at once');
  f.say({ type: 'stop' });
  await tick();
  assert.deepEqual(seen, ['stop']);
  // A reloaded page says ready again: it gets its first messages again.
  f.say({ type: 'ready' });
  await tick();
  assert.deepEqual(f.posted.at(-1), { type: 'init' });
});

test('a handler\'s error is shown; after dispose nothing is posted or handled', async () => {
  const f = fakePanel();
  const view = fillViewPanel<{ type: string }, { type: string }>(fakeContext('/tmp') as never, f.panel as never, 'runqlat', 'T');
  let calls = 0;
  view.onMessage(() => {
    calls++;
    throw new Error('export failed: disk full');
  });
  f.say({ type: 'ready' });
  f.say({ type: 'export' });
  await tick();
  assert.equal(calls, 1);
  assert.match(recorded.errors.at(-1) ?? '', /export failed: disk full/);
  f.dispose();
  const before = f.posted.length;
  view.post({ type: 'late' });
  f.say({ type: 'export' });
  await tick();
  assert.equal(f.posted.length, before);
  assert.equal(calls, 1);
  assert.equal(view.ready, false);
});
