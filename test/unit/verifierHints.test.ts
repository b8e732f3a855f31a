// Errors that name the cause and the fix: verifier rejections get a one-line hint for the common
// cases, accepted programs their instruction count and verification time, compiler-made
// "; @ file:0" annotations stay out of excerpts, and a misspelt helper is named with the closest
// real one (from libbpf's bpf_helper_defs.h) whether clang or libbpf reports it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { diagnoseProgram, formatStats, verifierHint, verifierStats } from '../../extension/authoring/verifierLog';
import { closestHelper, explainClangMessage, HELPER_DEFS, undeclaredFunction, unresolvedExternDiagnostics, unresolvedExterns } from '../../extension/authoring/unresolvedFunctions';
import { bpfClangArgs } from '../../extension/authoring/buildCommand';

const REJECTED = `0: R1=ctx() R10=fp0
; __u32 cpu = bpf_get_smp_processor_id(); @ bad_null.bpf.c:19
0: (85) call bpf_get_smp_processor_id#8       ; R0=scalar()
2: (bf) r2 = r10                      ; R2=fp0 R10=fp0
;  @ bad_null.bpf.c:0
3: (07) r2 += -4                      ; R2=fp-4
; __u64 *val = bpf_map_lookup_elem(&counts, &cpu); @ bad_null.bpf.c:20
6: (85) call bpf_map_lookup_elem#1    ; R0=map_value_or_null(id=1,map=counts,ks=4,vs=8)
; *val += 1; /* BAD: val may be NULL */ @ bad_null.bpf.c:22
7: (79) r1 = *(u64 *)(r0 +0)
R0 invalid mem access 'map_value_or_null'
verification time 65 usec
stack depth 8
processed 7 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0`.split('\n');

test('a NULL-check rejection gets its hint; the excerpt has no "; @ file:0" line nor the trailer', () => {
  const d = diagnoseProgram({ program: 'count_switches', lines: REJECTED })!;
  assert.equal(d.line, 22);
  assert.equal(d.message, "R0 invalid mem access 'map_value_or_null'");
  assert.match(d.hint!, /may be NULL.*if \(!val\) return 0;/);
  assert.doesNotMatch(d.excerpt, /bad_null\.bpf\.c:0/);
  assert.doesNotMatch(d.excerpt, /verification time|stack depth/);
});

test('hints for loops, bounds, program-type helpers and licences; none for an unknown message', () => {
  assert.match(verifierHint('back-edge from insn 12 to 8')!, /constant bound/);
  assert.match(verifierHint('infinite loop detected at insn 5')!, /bpf_loop/);
  assert.match(verifierHint('invalid access to map value, value_size=64 off=64 size=1')!, /in bounds/);
  assert.match(verifierHint('R1 min value is negative, either use unsigned index or do a if (index >=0) check.')!, /in bounds/);
  assert.match(verifierHint('program of this type cannot use helper bpf_probe_write_user#36')!, /program type/);
  assert.match(verifierHint('unknown func bpf_sk_lookup_tcp#84')!, /program type/);
  assert.match(verifierHint('cannot call GPL-restricted function from non-GPL compatible program')!, /LICENSE/);
  assert.equal(verifierHint('something new the kernel says'), undefined);
});

test('an accepted program reports instructions processed and verification time', () => {
  const log = '== program on_exec ==\n0: R1=ctx() R10=fp0\n0: (b7) r0 = 0\n1: (95) exit\nverification time 119 usec\nstack depth 0\nprocessed 22 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 2 mark_read 0\n';
  const s = verifierStats(log);
  assert.deepEqual(s, [{ program: 'on_exec', insns: 22, timeUs: 119, totalStates: 1, peakStates: 2 }]);
  assert.equal(formatStats(s), 'on_exec: 22 instructions processed, verified in 119 µs (peak 2 states)');
});

test('a misspelt helper is named with the closest real helper, from clang and from libbpf', (t) => {
  if (!fs.existsSync(HELPER_DEFS)) return t.skip(`${HELPER_DEFS} missing (apt-get install libbpf-dev)`);
  assert.equal(closestHelper('bpf_ringbuf_reserv'), 'bpf_ringbuf_reserve');
  assert.equal(closestHelper('bpf_ringbuf_reserve'), undefined);
  const clang15 = "implicit declaration of function 'bpf_ringbuf_reserv' is invalid in C99 [-Werror,-Wimplicit-function-declaration]";
  const clang16 = "call to undeclared function 'bpf_ringbuf_reserv'; ISO C99 and later do not support implicit function declarations [-Wimplicit-function-declaration]";
  for (const m of [clang15, clang16]) {
    assert.equal(undeclaredFunction(m), 'bpf_ringbuf_reserv');
    assert.match(explainClangMessage(m), /Did you mean 'bpf_ringbuf_reserve'\?$/);
  }
  const log = "libbpf: failed to find BTF for extern 'bpf_ringbuf_reserv': -2\nlibbpf: failed to load object 'x.bpf.o'";
  assert.deepEqual(unresolvedExterns(log), ['bpf_ringbuf_reserv']);
  const src = { path: '/p/x.bpf.c', text: '/* bpf_ringbuf_reserv( in a comment */\nint f(void)\n{\n\te = bpf_ringbuf_reserv(&events, 8, 0);\n}\n' };
  const [d] = unresolvedExternDiagnostics(log, [src], '/p/x.bpf.o');
  assert.deepEqual({ file: d.file, line: d.line, column: d.column }, { file: '/p/x.bpf.c', line: 4, column: 6 });
  assert.match(d.message, /^unresolved function 'bpf_ringbuf_reserv'.*Did you mean 'bpf_ringbuf_reserve'\?/);
});

test('every BPF build makes implicit declarations errors', () => {
  assert.ok(bpfClangArgs({ vmlinuxDir: '/v', arch: { targetArch: 'x86', multiarch: 'x86_64-linux-gnu' } }).includes('-Werror=implicit-function-declaration'));
});
