// javac reads sources in the platform encoding, which is US-ASCII where no locale is set (sudo,
// su -, CI without LANG): one non-ASCII character in a comment fails the compile. The Java files
// the tests and the bench compile stay ASCII so they build under any locale.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../helpers';

function javaFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? javaFiles(p) : e.name.endsWith('.java') ? [p] : [];
  });
}

test('every Java source the tests and the bench compile is ASCII (javac under LANG unset reads US-ASCII)', () => {
  const files = ['test', 'bench', 'scripts'].flatMap((d) => javaFiles(path.join(repoRoot, d)));
  assert.ok(files.length >= 10, `found ${files.length} Java files`);
  const bad = files.flatMap((f) =>
    fs
      .readFileSync(f, 'latin1')
      .split('\n')
      .flatMap((l, i) => (/[^\x00-\x7f]/.test(l) ? [`${path.relative(repoRoot, f)}:${i + 1}`] : [])),
  );
  assert.deepEqual(bad, [], `non-ASCII characters in ${bad.join(', ')}`);
});
