// Java frame types from the agent's code-cache log (extension/tracers/javaAgent/frameTypes.ts), over
// agent text in the format native/jvmagent/agent.c writes (M, D, L, U and S lines) and a
// `jcmd Compiler.codelist` reply in HotSpot 17's format: what the leaf's PC shows, what the
// inline records and nmethod lifetimes imply for the callers, and where the type stays unknown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyAgentLog, joinStack, parseAgentText } from '../../extension/tracers/javaAgent/decode';
import { buildCodeCache, classesKey, classifyFrames, CodeCache, frameClasses, levelType, parseCodelist, restoreRecoveredLeaf, typesOf } from '../../extension/tracers/javaAgent/frameTypes';

const AGENT = [
  'A\t42\t1',
  'M\t1\tFrameTypes\tstep\tFrameTypes.java\t0',
  'M\t2\tFrameTypes\thot\tFrameTypes.java\t0',
  'M\t3\tFrameTypes\trun\tFrameTypes.java\t0',
  'M\t4\tFrameTypes\tmain\tFrameTypes.java\t0',
  'M\t5\tjava.util.zip.Deflater\tdeflateBytesBytes\tDeflater.java\t1',
  'M\t6\tFrameTypes\tcold\tFrameTypes.java\t0',
  // the interpreter and a stub (DynamicCodeGenerated, replayed at start)
  'D\t10\t1000\t4096\tInterpreter',
  'D\t10\t9000\t256\tStubRoutines (1)',
  // hot, C2: step inlined at hot's BCI 7 (PC records: step@3 in hot@7, step@5 in hot@7)
  'L\t10\t2\t5000\t1024\t1:3,2:7\t1:5,2:7',
  // main, C1: run inlined at main's BCI 20
  'L\t10\t4\t6000\t1024\t3:2,4:20',
  // the replay and a racing compile reported main's nmethod twice
  'L\t11\t4\t6000\t1024\t3:2,4:20',
  // run, compiled on its own (the codelist names other code there: tier unknown)
  'L\t10\t3\t7000\t256',
  // cold's nmethod is freed at t=5000
  'L\t10\t6\tb000\t256',
  'U\t5000\t6\tb000',
  // run compiled again; its load event comes late (t=300, HotSpot's ServiceThread)
  'L\t300\t3\ta000\t256',
  'S\t7\t100\t4\t@5010\t1:4:9\t2:7:15\t3:2:21\t4:20:28', // leaf PC in hot's C2 code
  'S\t7\t110\t3\t@1800\t2:9:15\t3:2:21\t4:20:28', // leaf PC in the interpreter
  'S\t7\t6000\t3\t@0\t6:7:15\t3:2:21\t4:99:30', // no PC; cold's nmethod freed by then
  'S\t7\t200\t2\t@a010\t3:1:21\t4:20:28', // leaf PC in run's new code, announced late
  'S\t7\t120\t2\t@9010\t5:-3:-1\t2:7:15', // a JNI method under a stub PC
  'S\t7\t130\t2\t@5010\t4:20:28\t3:2:21', // a PC in hot's code, but frames that do not fit it
  'S\t7\t250\t2\t3:2:21\t4:99:30', // no PC, before run's second nmethod
  '',
].join('\n');

const CODELIST = [
  '12345:',
  '7 4 0 FrameTypes.hot(JI)J [0x0000000000004f00, 0x0000000000005000 - 0x0000000000005400]',
  '9 3 0 FrameTypes.main([Ljava/lang/String;)V [0x0000000000005f00, 0x0000000000006000 - 0x0000000000006400]',
  '11 4 0 Other.x()V [0x0000000000006f00, 0x0000000000007000 - 0x0000000000007100]',
  '13 1 2 FrameTypes.run(J)J [0x0000000000009f00, 0x000000000000a000 - 0x000000000000a100]',
  '',
].join('\n');

function setup() {
  const log = emptyAgentLog();
  assert.equal(parseAgentText(AGENT, log), '');
  const cache = buildCodeCache(log.code, log.methods, parseCodelist(CODELIST));
  const types = (i: number) => classifyFrames(log.records[i], log.methods, cache);
  return { log, cache, types };
}

test('parseCodelist reads id, level, state, name and the code range', () => {
  const e = parseCodelist(CODELIST);
  assert.equal(e.length, 4, 'the "pid:" header line is not an entry');
  assert.deepEqual(e[0], { compileId: 7, level: 4, state: 0, name: 'FrameTypes.hot(JI)J', codeBegin: 0x5000n, codeEnd: 0x5400n });
  assert.deepEqual([levelType(1), levelType(2), levelType(3), levelType(4), levelType(0), levelType(undefined)], ['c1', 'c1', 'c1', 'c2', 'compiled', 'compiled']);
});

test('the code cache keeps one nmethod per load, ends it at its unload, and takes levels only where the method name agrees', () => {
  const { cache, log } = setup();
  assert.equal(cache.nmethods.length, 5, "main's nmethod reported twice is one");
  assert.equal(log.records[0].pc, 0x5010n);
  assert.equal(cache.byMethod.get(6)![0].unloadNs, 5000n);
  assert.equal(cache.levelOf(cache.byMethod.get(2)![0]), 4);
  assert.equal(cache.levelOf(cache.byMethod.get(4)![0]), 3);
  assert.equal(cache.levelOf(cache.byMethod.get(3)!.find((n) => n.addr === 0x7000n)!), undefined, 'the codelist has other code at that address');
  assert.deepEqual(cache.interpreter, [{ addr: 0x1000n, end: 0x2000n }]);
});

test("leaf PC in an nmethod: the frames it inlined are 'inlined', its own frame has its tier; callers follow the inline records", () => {
  const { types } = setup();
  // step inlined into hot (C2, the PC says so); run inlined into main's C1 code at main's BCI 20
  assert.deepEqual(types(0), ['inlined', 'c2', 'inlined', 'c1']);
});

test('leaf PC in the interpreter: the leaf is interpreted', () => {
  const { types } = setup();
  assert.deepEqual(types(1), ['interpreted', 'inlined', 'c1']);
});

test('no PC: a method without live compiled code is interpreted; of two live nmethods the newest counts; a call site no record holds is not inlined', () => {
  const { types } = setup();
  // cold's nmethod was freed at 5000; run has two live nmethods, the newer C1; main's C1 code
  // has no record at BCI 99, so run is not inlined there and main is its own (C1) frame
  assert.deepEqual(types(2), ['interpreted', 'c1', 'c1']);
  // before run's second nmethod, its only code is at an address the codelist gives to another method
  assert.deepEqual(types(6), ['compiled', 'c1']);
});

test('a PC in code whose load event came after the sample still counts (the code was running)', () => {
  const { types } = setup();
  assert.deepEqual(types(3), ['c1', 'c1']);
});

test('a codelist that comes later gives the tier of frames classified before it', () => {
  const log = emptyAgentLog();
  parseAgentText(AGENT, log);
  const cache = new CodeCache(log.methods);
  cache.take(log.code);
  assert.equal(log.code.loads.length, 0, 'the events are taken');
  const classes = frameClasses(log.records[0], log.methods, cache);
  assert.deepEqual(typesOf(classes, cache), ['inlined', 'compiled', 'inlined', 'compiled']);
  cache.addCodelist(parseCodelist(CODELIST));
  assert.deepEqual(typesOf(classes, cache), ['inlined', 'c2', 'inlined', 'c1']);
  assert.equal(classesKey(classes), `L,n${classes[1] && typeof classes[1] === 'object' ? classes[1].id : '?'},L,n${classes[3] && typeof classes[3] === 'object' ? classes[3].id : '?'}`);
});

test('native methods and frames that do not fit the PC stay without a type rather than a guess', () => {
  const { types, log } = setup();
  const t = types(4);
  assert.equal(t[0], undefined, 'a JNI method is a native frame');
  assert.equal(t[1], 'c2', 'hot at a call site its live C2 code holds (inferred)');
  assert.equal(types(5)[0], undefined, "main's frame cannot be the leaf of hot's code");
  // joined: the type reaches the frame, its kind follows it, and an inlined frame is marked inlined
  const joined = joinStack([], log.records[0], log.methods, types(0));
  assert.deepEqual(
    joined.map((f) => [f.function, f.kind, f.javaType, f.inlined ?? false]),
    [
      ['FrameTypes.step', 'jit', 'inlined', true],
      ['FrameTypes.hot', 'jit', 'c2', false],
      ['FrameTypes.run', 'jit', 'inlined', true],
      ['FrameTypes.main', 'jit', 'c1', false],
    ],
  );
  const interp = joinStack([], log.records[1], log.methods, types(1));
  assert.equal(interp[0].kind, 'interpreted');
  assert.equal(joinStack([], log.records[0], log.methods)[1].javaType, undefined, 'without types, no javaType');
});

test('a sample walked after a retry gets back the compiled method its PC was entering or leaving; a stub PC adds nothing', () => {
  const { log, cache } = setup();
  // the PC 0x5004 is in hot's C2 code (its prologue); the retry walked from its caller run
  const extra = emptyAgentLog();
  extra.methods = log.methods;
  parseAgentText(['S\t7\t140\t2\t@5004\t~1\t3:2:21\t4:20:28', 'S\t7\t150\t1\t@9010\t~1\t4:20:28', 'S\t7\t160\t2\t@5004\t3:2:21\t4:20:28', ''].join('\n'), extra);
  const [inHot, inStub, notRecovered] = extra.records;
  assert.equal(inHot.recovered, 1, 'the ~1 field is read');
  assert.equal(restoreRecoveredLeaf(inHot, cache), true);
  assert.deepEqual(inHot.frames[0], { method: 2, bci: -1, line: -1 }, 'hot is the leaf again');
  assert.equal(inHot.code, 3);
  assert.equal(restoreRecoveredLeaf(inHot, cache), false, 'once only');
  assert.equal(classifyFrames(inHot, log.methods, cache)[0], 'c2', "the restored leaf is hot's C2 frame");
  assert.equal(joinStack([], inHot, log.methods)[0].line, null, 'its line is unknown');
  assert.equal(restoreRecoveredLeaf(inStub, cache), false, 'a stub PC names no method');
  assert.equal(inStub.frames.length, 1);
  assert.equal(restoreRecoveredLeaf(notRecovered, cache), false, 'a sample AGCT walked at once is left alone');
  assert.equal(notRecovered.frames.length, 2);
});
