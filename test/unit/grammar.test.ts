// The TextMate grammars (syntaxes/) against the annotated cases in test/grammar/, through
// vscode-tmgrammar-test (vscode-textmate + oniguruma, as VS Code tokenizes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const bin = path.join(root, 'node_modules', '.bin', 'vscode-tmgrammar-test');

function runCases(...globs: string[]) {
  return spawnSync(bin, ['--config', 'test/grammar/config.json', ...globs], { cwd: root, encoding: 'utf8' });
}

test('BPF injection, plain C and bpftrace grammar cases pass', () => {
  const r = runCases('test/grammar/*.bpf.c', 'test/grammar/plain.c', 'test/grammar/*.bt');
  assert.equal(r.status, 0, `grammar tests failed:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /sections\.bpf\.c run successfuly/);
  assert.match(r.stdout, /plain\.c run successfuly/);
  assert.match(r.stdout, /probes\.bt run successfuly/);
});

test('a wrong expectation fails (the runner really checks scopes)', () => {
  const tmp = fs.mkdtempSync(path.join(root, 'test', 'grammar', 'tmp-'));
  try {
    fs.writeFileSync(path.join(tmp, 'wrong.bpf.c'), '// SYNTAX TEST "source.c" "negative control"\nSEC("xdp")\n// <--- support.function.helper.bpf\n');
    const r = runCases(path.relative(root, path.join(tmp, 'wrong.bpf.c')));
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /missing required scopes: support\.function\.helper\.bpf/);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('package.json contributes the grammars the tests exercise', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const grammars = pkg.contributes.grammars as { scopeName: string; path: string; injectTo?: string[] }[];
  const inj = grammars.find((g) => g.scopeName === 'ebpf.injection.c');
  assert.ok(inj, 'injection grammar contributed');
  assert.deepEqual(inj.injectTo, ['source.c']);
  assert.ok(grammars.find((g) => g.scopeName === 'source.bpftrace'));
  for (const g of grammars) assert.ok(fs.existsSync(path.join(root, g.path)), `${g.path} exists`);
});
