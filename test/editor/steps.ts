// How the editor-tier test files run their steps on one shared editor session. The failure
// evidence (a screenshot and the editor's logs in test-artifacts/, for CI) must be kept the same
// way by every file, so the steps and the session set-up live here rather than in each file.
import type { TestContext } from 'node:test';
import { EditorSession, type StartOptions } from './codeServer';

/** Starts an editor session that closes when the test `t` ends. */
export async function startSession(t: TestContext, opts: StartOptions = {}): Promise<EditorSession> {
  const s = await EditorSession.start(opts);
  t.after(() => s.close());
  return s;
}

/** Runs one step as a subtest; on failure keeps a screenshot and the editor's logs in test-artifacts/. */
export async function step(t: TestContext, s: EditorSession, name: string, fn: () => Promise<void>, skip?: string): Promise<void> {
  await t.test(name, { skip }, async () => {
    try {
      await fn();
    } catch (e) {
      const slug = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
      await s.screenshot(`failed-${slug}`).catch(() => {});
      s.saveLogs(`failed-${slug}-logs`);
      throw e;
    }
  });
}
