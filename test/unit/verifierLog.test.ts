// Verifier logs → source diagnostics. The logs are real ones from this kernel (6.x with BTF line
// info "; text @ file:line"), in libbpf's and the addon's framing, plus the older format without
// "@ file:line".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diagnoseProgram, failedProgram, splitPrograms, verifierDiagnostics } from '../../extension/authoring/verifierLog';

const BAD_NULL = `libbpf: map 'counts': created successfully, fd=19
libbpf: prog 'count_switches': BPF program load failed: Permission denied
libbpf: prog 'count_switches': -- BEGIN PROG LOAD LOG --
arg#0 reference type('UNKNOWN ') size cannot be determined: -22
0: R1=ctx() R10=fp0
; __u32 cpu = bpf_get_smp_processor_id(); @ bad_null.bpf.c:19
0: (85) call bpf_get_smp_processor_id#8       ; R0=scalar(smin=smin32=0,smax=umax=smax32=umax32=1,var_off=(0x0; 0x1))
1: (63) *(u32 *)(r10 -4) = r0         ; R0=scalar(smin=smin32=0,smax=umax=smax32=umax32=1,var_off=(0x0; 0x1)) R10=fp0 fp-8=mmmm????
2: (bf) r2 = r10                      ; R2=fp0 R10=fp0
;  @ bad_null.bpf.c:0
3: (07) r2 += -4                      ; R2=fp-4
; __u64 *val = bpf_map_lookup_elem(&counts, &cpu); @ bad_null.bpf.c:20
4: (18) r1 = 0xffff8881044cf000       ; R1=map_ptr(map=counts,ks=4,vs=8)
6: (85) call bpf_map_lookup_elem#1    ; R0=map_value_or_null(id=1,map=counts,ks=4,vs=8)
; *val += 1; /* BAD: val may be NULL */ @ bad_null.bpf.c:22
7: (79) r1 = *(u64 *)(r0 +0)
R0 invalid mem access 'map_value_or_null'
processed 7 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0
-- END PROG LOAD LOG --
libbpf: prog 'count_switches': failed to load: -13
libbpf: failed to load object '/tmp/bad_null.bpf.o'
`;

const SOURCE = {
  path: '/src/bad_null.bpf.c',
  text: Array.from({ length: 21 }, (_, i) => `// line ${i + 1}`).join('\n') + '\n\t*val += 1; /* BAD: val may be NULL */\n\treturn 0;\n',
};

test('the rejected instruction maps to the nearest preceding source line', () => {
  const [d] = verifierDiagnostics(BAD_NULL);
  assert.equal(d.file, 'bad_null.bpf.c');
  assert.equal(d.line, 22);
  assert.equal(d.message, "R0 invalid mem access 'map_value_or_null'");
  assert.equal(d.program, 'count_switches');
  assert.match(d.excerpt, /7: \(79\) r1 = \*\(u64 \*\)\(r0 \+0\)/);
  assert.match(d.excerpt, /R0 invalid mem access/);
  assert.doesNotMatch(d.excerpt, /processed 7 insns/);
});

test('sources turn the basename into a path and give the column of the statement', () => {
  const [d] = verifierDiagnostics(BAD_NULL, [SOURCE]);
  assert.equal(d.file, '/src/bad_null.bpf.c');
  assert.equal(d.line, 22);
  assert.equal(d.column, 2); // after the tab
});

test('line-0 annotations (compiler-generated code) are skipped', () => {
  const log = ['; x = y; @ a.bpf.c:5', '3: (07) r2 += -4', ';  @ a.bpf.c:0', '4: (79) r1 = *(u64 *)(r0 +0)', 'R0 invalid mem access', 'processed 5 insns'].join('\n');
  const [d] = verifierDiagnostics(log);
  assert.equal(d.line, 5);
});

test("the addon's '== program X ==' framing and libbpf's failed-program line", () => {
  const log = `== program good ==\nprocessed 3 insns (limit 1000000)\n== program bad ==\n; return *p; @ x.bpf.c:9\n0: (61) r0 = *(u32 *)(r1 +0)\ninvalid bpf_context access off=0 size=4\nprocessed 1 insns\n== libbpf ==\nlibbpf: prog 'bad': failed to load: -13\n`;
  assert.equal(failedProgram(log), 'bad');
  const progs = splitPrograms(log);
  assert.deepEqual(
    progs.map((p) => p.program),
    ['good', 'bad'],
  );
  assert.equal(diagnoseProgram(progs[0]), undefined, 'a successful program has no diagnostic');
  const diags = verifierDiagnostics(log);
  assert.equal(diags.length, 1);
  assert.equal(diags[0].line, 9);
  assert.equal(diags[0].message, 'invalid bpf_context access off=0 size=4');
});

test('older kernels without "@ file:line" are located by searching the source text', () => {
  const log = ['; __u64 *val = bpf_map_lookup_elem(&counts, &cpu);', '6: (85) call bpf_map_lookup_elem#1', '; *val += 1; /* BAD: val may be NULL */', '7: (79) r1 = *(u64 *)(r0 +0)', "R0 invalid mem access 'map_value_or_null'", 'processed 7 insns'].join('\n');
  const [d] = verifierDiagnostics(log, [SOURCE]);
  assert.equal(d.file, '/src/bad_null.bpf.c');
  assert.equal(d.line, 22);
  assert.equal(d.column, 2);
});

test('multi-line errors are kept together; state lines between are not part of the message', () => {
  const log = ['; v->x = 1; @ m.bpf.c:30', '12: (7b) *(u64 *)(r0 +8) = r1', 'invalid access to map value, value_size=8 off=8 size=8', 'R0 min value is outside of the allowed memory range', 'processed 12 insns'].join('\n');
  const [d] = verifierDiagnostics(log);
  assert.equal(d.line, 30);
  assert.equal(d.message, 'invalid access to map value, value_size=8 off=8 size=8\nR0 min value is outside of the allowed memory range');
});

test('a log without any source annotation still yields an error, with a hint about -g', () => {
  const log = ['0: (85) call bpf_probe_read#4', 'program of this type cannot use helper bpf_probe_read#4', 'processed 1 insns'].join('\n');
  const [d] = verifierDiagnostics(log, [SOURCE]);
  assert.equal(d.file, SOURCE.path);
  assert.equal(d.line, 1);
  assert.match(d.message, /cannot use helper bpf_probe_read#4/);
  assert.match(d.message, /-g/);
});

test('a successful load (only "processed ...") gives no diagnostics', () => {
  assert.deepEqual(verifierDiagnostics('== program ok ==\nprocessed 22 insns (limit 1000000) max_states_per_insn 0 total_states 2\n'), []);
});
