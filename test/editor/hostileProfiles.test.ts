// Hostile profile files in a cloned repository, in a real VS Code (code-server): the flame graph
// is the default editor of *.pb.gz, *.speedscope.json, *.folded and *.cpuprofile, so a double-click
// reads the file. A 4 GiB gzip bomb and a speedscope file whose stacks are N² frames (each of
// which once took the extension host down) show an error naming the limit, and the same window
// then opens a valid profile: the extension host was never at risk.
import { test } from 'node:test';
import fs from 'node:fs';
import path from 'node:path';
import { skipReason } from './codeServer';
import { startSession, step } from './steps';
import { openInExplorer } from './editorDom';
import { gzipBombMembers, speedscopeEventedRamp } from '../unit/hostileProfiles';

const FOLDED = ['main;parse;lex 30', 'main;compute;hot 60', 'main 10', ''].join('\n');

test('hostile profile files show an error and leave the window working (code-server)', { skip: skipReason(), timeout: 300_000 }, async (t) => {
  const s = await startSession(t, { files: { 'profiles/hot.folded': FOLDED } });
  fs.writeFileSync(path.join(s.workspace, 'profiles', 'bomb.pb.gz'), gzipBombMembers());
  fs.writeFileSync(path.join(s.workspace, 'profiles', 'ramp.speedscope.json'), speedscopeEventedRamp());

  const open = (name: string) => openInExplorer(s, 'profiles', name);

  await step(t, s, 'a 4 GiB gzip bomb named *.pb.gz shows the limit it passed', async () => {
    await open('bomb.pb.gz');
    await s.webviewFrameWithText(/bomb\.pb\.gz[\s\S]*maxDecompressedBytes/, 30_000);
    await s.runCommandFromPalette('View: Close All Editors');
  });

  await step(t, s, 'a speedscope file of N² frames shows the limit it passed', async () => {
    await open('ramp.speedscope.json');
    await s.webviewFrameWithText(/ramp\.speedscope\.json[\s\S]*maxTotalFrames/, 30_000);
    await s.runCommandFromPalette('View: Close All Editors');
  });

  await step(t, s, 'the same window still opens a valid profile', async () => {
    await open('hot.folded');
    const frame = await s.webviewFrame('CPU: hot.folded', 30_000);
    await frame.locator('.toolbar .status', { hasText: /100 samples/ }).waitFor({ timeout: 15_000 });
  });
});
