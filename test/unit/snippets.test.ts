// Every snippet in snippets/bpf.code-snippets, inserted with its defaults into a file with the
// usual includes, compiles with clang -target bpf (the same flags as the build task). Needs
// clang and build/vmlinux.h (made by `npm run build`); no root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expandSnippet } from '../../extension/authoring/snippetBody';
import { archInfo, buildCommand } from '../../extension/authoring/buildCommand';

const root = path.resolve(__dirname, '..', '..');
const snippets = JSON.parse(fs.readFileSync(path.join(root, 'snippets', 'bpf.code-snippets'), 'utf8')) as Record<string, { prefix: string; body: string[]; description: string }>;
const vmlinuxDir = path.join(root, 'build');
const haveClang = spawnSync('clang', ['--version']).status === 0;
const haveVmlinux = fs.existsSync(path.join(vmlinuxDir, 'vmlinux.h'));

const PRELUDE = ['#include "vmlinux.h"', '#include <bpf/bpf_helpers.h>', '#include <bpf/bpf_tracing.h>', '#include <bpf/bpf_core_read.h>', ''].join('\n');

test('snippet expansion resolves tab stops, mirrors and choices to their defaults', () => {
  assert.equal(expandSnippet('SEC("tp/${1:sched}/${2:x}") int ${3:f_${2:x}}(void) { $0 }'), 'SEC("tp/sched/x") int f_x(void) {  }');
  assert.equal(expandSnippet(['a ${1|GPL,MIT|}', 'b $1']), 'a GPL\nb GPL');
});

test('every snippet is prefixed "bpf-" and has a description', () => {
  for (const [name, s] of Object.entries(snippets)) {
    assert.match(s.prefix, /^bpf-/, name);
    assert.ok(s.description.length > 10, name);
  }
  const prefixes = Object.values(snippets).map((s) => s.prefix);
  for (const want of ['bpf-tracepoint', 'bpf-raw-tp', 'bpf-tp-btf', 'bpf-uprobe', 'bpf-uretprobe', 'bpf-usdt', 'bpf-perf-event', 'bpf-ringbuf', 'bpf-hash-map', 'bpf-percpu-map', 'bpf-log2-hist', 'bpf-license']) {
    assert.ok(prefixes.includes(want), `snippet ${want} exists`);
  }
});

for (const [name, s] of Object.entries(snippets)) {
  test(`snippet ${s.prefix} compiles as inserted`, (t) => {
    if (!haveClang) return t.skip('clang is not installed (apt-get install clang)');
    if (!haveVmlinux) return t.skip('build/vmlinux.h is missing: run npm run build');
    const body = expandSnippet(s.body);
    const standalone = body.includes('#include "vmlinux.h"');
    const license = body.includes('SEC("license")') ? '' : '\nchar LICENSE[] SEC("license") = "GPL";\n';
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-snippet-'));
    try {
      const src = path.join(dir, 'snippet.bpf.c');
      fs.writeFileSync(src, `${standalone ? '' : PRELUDE}${body}\n${license}`);
      const cmd = buildCommand({ source: src, output: path.join(dir, 'snippet.bpf.o'), vmlinuxDir, arch: archInfo(os.arch())! });
      const r = spawnSync(cmd.command, [...cmd.args, '-Werror'], { encoding: 'utf8' });
      assert.equal(r.status, 0, `${name} does not compile:\n${r.stderr}\n--- source ---\n${fs.readFileSync(src, 'utf8')}`);
      const o = spawnSync('llvm-objdump', ['-h', path.join(dir, 'snippet.bpf.o')], { encoding: 'utf8' });
      if (o.status === 0 && /SEC\("(tracepoint|raw_tp|tp_btf|uprobe|uretprobe|usdt|perf_event)/.test(body)) {
        const sec = /SEC\("([^"]+)"\)\s*\n\s*int/.exec(body)![1];
        assert.ok(o.stdout.includes(sec.slice(0, 20)), `object has section ${sec}`);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
