// The language server's kernel knowledge: members after "->" and "." from vmlinux.h, hover with
// offsets and sizes read from the running kernel's BTF (compared with bpftool's own dump of the
// same BTF), and SEC() attach targets completed and checked against this kernel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { complete, diagnose, hover, memberAccess, type Knowledge } from '../../extension/lsp/analysis';
import { loadHelpers, DEFAULT_HELPER_DEFS } from '../../extension/lsp/knowledge';
import { mapTypes } from '../../extension/lsp/mapTypes';
import { KernelStructs } from '../../extension/authoring/kernelStructs';
import { loadKernelBtf, KERNEL_BTF_PATH } from '../../extension/authoring/kernelBtf';
import { checkAttachTarget, completeAttachTarget, kallsymsFunctions, loadAttachTargets } from '../../extension/authoring/attachTargets';
import { findTool } from '../../extension/authoring/toolchain';

const vmlinux = path.resolve(__dirname, '..', '..', 'build', 'vmlinux.h');
const vmText = fs.existsSync(vmlinux) ? fs.readFileSync(vmlinux, 'utf8') : undefined;
const structs = vmText ? new KernelStructs(vmText) : undefined;
const btf = loadKernelBtf().btf;
const targets = loadAttachTargets(btf);
const k: Knowledge = { helpers: loadHelpers(DEFAULT_HELPER_DEFS, () => undefined), mapTypes: mapTypes(vmText), structs: () => structs, btf: () => btf, targets: () => targets };

function at(src: string): [string, number] {
  const i = src.indexOf('|');
  return [src.slice(0, i) + src.slice(i + 1), i];
}

const PROG = `#include "vmlinux.h"
SEC("tp/sched/sched_process_exec")
int on_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct exec_event *e;
	CURSOR
	return 0;
}
`;

test('member access parsing: root variable, path and partial word', () => {
  assert.deepEqual(memberAccess('x = task->', 10), { root: 'task', path: [], partial: '' });
  assert.deepEqual(memberAccess('x = task->real_parent->tg', 25), { root: 'task', path: ['real_parent'], partial: 'tg' });
  assert.deepEqual(memberAccess('s.mm.', 5), { root: 's', path: ['mm'], partial: '' });
  assert.equal(memberAccess('x = 1 + ', 8), undefined);
});

test('completion after task-> and task->real_parent-> lists task_struct members', (t) => {
  if (!structs) return t.skip('build/vmlinux.h missing: run node scripts/build.mjs');
  for (const access of ['task->', 'task->real_parent->', 'task->real_parent->real_parent->co']) {
    const [text, off] = at(PROG.replace('CURSOR', `u32 x = ${access}|`));
    const c = complete(text, off, k);
    assert.ok(c, access);
    const labels = c.items.map((i) => i.label);
    if (access.endsWith('co')) {
      assert.ok(labels.includes('comm'), access);
      assert.equal(c.replaceStart, off - 2);
      continue;
    }
    for (const f of ['pid', 'tgid', 'comm', 'real_parent', 'mm']) assert.ok(labels.includes(f), `${access} offers ${f}`);
    assert.match(c.items.find((i) => i.label === 'pid')!.detail!, /pid_t \(struct task_struct\)/);
  }
  // ctx-> is the tracepoint's own struct; e-> is the project's struct, which only clangd knows.
  const [ctxText, ctxOff] = at(PROG.replace('CURSOR', 'u32 x = ctx->|'));
  assert.ok(complete(ctxText, ctxOff, k)!.items.some((i) => i.label === 'old_pid'));
  const [eText, eOff] = at(PROG.replace('CURSOR', 'e->|'));
  assert.equal(complete(eText, eOff, k), undefined);
});

test('hover on a member shows its offset and size as bpftool reports them for this kernel', (t) => {
  if (!structs || !btf) return t.skip('build/vmlinux.h or kernel BTF missing');
  const bpftool = findTool('bpftool');
  if (!bpftool) return t.skip('bpftool not installed');
  // The reference: bpftool's raw dump of the same BTF gives bits_offset for each member.
  const raw = spawnSync(bpftool, ['btf', 'dump', 'file', KERNEL_BTF_PATH], { encoding: 'utf8', maxBuffer: 512 << 20 }).stdout;
  const start = raw.search(/^\[\d+\] STRUCT 'task_struct' size=\d+ vlen=\d+$/m);
  assert.ok(start >= 0);
  const size = Number(/size=(\d+)/.exec(raw.slice(start))![1]);
  const block = raw.slice(start, raw.indexOf('\n[', start + 1));
  const pidBits = Number(/^\s+'pid' type_id=\d+ bits_offset=(\d+)/m.exec(block)![1]);
  const commBits = Number(/^\s+'comm' type_id=\d+ bits_offset=(\d+)/m.exec(block)![1]);
  const [text, off] = at(PROG.replace('CURSOR', 'u32 x = task->p|id;'));
  const h = hover(text, off, k)!;
  assert.ok(h.markdown.includes(`offset ${pidBits / 8}, size 4`), h.markdown);
  assert.match(h.markdown, /CO-RE: relocatable/);
  const [t2, o2] = at(PROG.replace('CURSOR', 'char *c = task->co|mm;'));
  assert.ok(hover(t2, o2, k)!.markdown.includes(`offset ${commBits / 8}, size 16`));
  const [t3, o3] = at(PROG.replace('CURSOR', 'struct task_st|ruct *p;'));
  assert.ok(hover(t3, o3, k)!.markdown.includes(`${size} bytes on this kernel`));
});

test('SEC() completes kernel functions and tracepoint categories of this kernel', (t) => {
  if (!targets.kprobeFunctions && !targets.btfFunctions) return t.skip('neither /proc/kallsyms nor kernel BTF readable');
  const [text, off] = at('SEC("kprobe/do_unlin|")');
  const c = complete(text, off, k)!;
  assert.ok(c.items.some((i) => i.label === 'do_unlinkat'), 'do_unlinkat offered');
  assert.equal(c.replaceStart, text.indexOf('do_unlin'));
  const [f, fo] = at('SEC("fentry/vfs_rea|")');
  assert.ok(complete(f, fo, k)!.items.some((i) => i.label === 'vfs_read'));
  if (targets.tracepoints) {
    const [tp, to] = at('SEC("tp/sch|")');
    assert.ok(complete(tp, to, k)!.items.some((i) => i.label === 'sched/'));
    const [tn, tno] = at('SEC("tp/sched/sched_process_e|")');
    const names = complete(tn, tno, k)!.items.map((i) => i.label);
    assert.ok(names.includes('sched_process_exec') && names.includes('sched_process_exit'));
  }
});

test('a missing attach target is a warning naming the closest existing one', (t) => {
  if (!targets.kprobeFunctions && !targets.btfFunctions) return t.skip('no kernel function list');
  const text = 'SEC("kprobe/do_unlinka")\nint a(void *c) { return 0; }\nSEC("kprobe/do_unlinkat")\nint b(void *c) { return 0; }\n';
  const d = diagnose(text, k);
  assert.equal(d.length, 1);
  assert.equal(d[0].severity, 'warning');
  assert.equal(d[0].code, 'missing-attach-target');
  assert.match(d[0].message, /no kernel function "do_unlinka" on this kernel .*Did you mean "kprobe\/do_unlinkat"\?/);
  if (targets.tracepoints) assert.match(checkAttachTarget('tp/sched/sched_process_exek', targets)!, /Did you mean "tp\/sched\/sched_process_exec"/);
  assert.equal(checkAttachTarget('tp/sched/sched_process_exec', targets), undefined);
  if (targets.rawTracepoints) assert.match(checkAttachTarget('tp_btf/sched_switchh', targets) ?? '', /no raw tracepoint "sched_switchh"/);
});

test('kallsyms parsing keeps text symbols only; completion caps long lists and says so', () => {
  const set = kallsymsFunctions('0000000000000000 T do_unlinkat\n0000000000000000 t helper_x\t[mod]\n0000000000000000 D some_data\n');
  assert.deepEqual([...set], ['do_unlinkat', 'helper_x']);
  const many = { release: 'x', kprobeFunctions: new Set(Array.from({ length: 1000 }, (_, i) => `f${i}`)) };
  const c = completeAttachTarget('kprobe/f', many)!;
  assert.equal(c.items.length, 300);
  assert.equal(c.incomplete, true);
});
