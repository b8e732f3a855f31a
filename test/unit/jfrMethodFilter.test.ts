// How a Java method is named to JFR's method timing and tracing (JDK 25): the latency target's
// Class.method or Class::method, the --method-timing list checked before it reaches the JVM's
// jcmd line (no spaces, no option injection), and the per-method timing table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { javaDescriptor, javaMethodFilter } from '../../extension/tracers/latency/jfrMethodTrace';
import { MAX_METHOD_FILTERS, methodFilter } from '../../extension/sys/jvm/jfrRecord';
import { methodTimingText } from '../../extension/model/jfr/methodTrace';

test('a latency target names a Java method as Class.method or Class::method', () => {
  assert.equal(javaMethodFilter('com.example.Foo.parse'), 'com.example.Foo::parse');
  assert.equal(javaMethodFilter('Foo.bar'), 'Foo::bar');
  assert.equal(javaMethodFilter('com.example.Foo$Inner.run'), 'com.example.Foo$Inner::run');
  assert.equal(javaMethodFilter('com.example.Foo.<init>'), 'com.example.Foo::<init>');
  assert.equal(javaMethodFilter(' Foo::bar '), 'Foo::bar');
  // one overload: JFR times them all, the descriptor is matched as the events are read
  assert.equal(javaMethodFilter('com.example.Foo.parse(Ljava/lang/String;)I'), 'com.example.Foo::parse');
  assert.equal(javaDescriptor('com.example.Foo.parse(Ljava/lang/String;)I'), '(Ljava/lang/String;)I');
  assert.equal(javaDescriptor('com.example.Foo.parse'), '');
  for (const native of ['malloc', 'foo.c:12', 'bar.isra.0', '_ZN3foo3barEv']) assert.equal(javaMethodFilter(native), undefined, native);
});

test('method filters are checked and joined with semicolons, nothing else reaches jcmd', () => {
  assert.equal(methodFilter(['a.B::c', ' a.D ', '@jakarta.ws.rs.GET', 'X::<init>', '::<clinit>'], 'm'), 'a.B::c;a.D;@jakarta.ws.rs.GET;X::<init>;::<clinit>');
  for (const bad of ['a b', 'a.B::c settings=x', 'a;b', 'a.B::c\nJFR.stop', 'a=b', '1abc', 'a.B::', '-x']) assert.throws(() => methodFilter([bad], 'm'), /is not a method filter/, bad);
  assert.throws(() => methodFilter(['', ' '], 'm'), /at least one method/);
  assert.throws(() => methodFilter(Array.from({ length: MAX_METHOD_FILTERS + 1 }, (_, i) => `A::m${i}`), 'm'), /at most/);
});

test('the method timing table: calls, min, avg, max in ms, and a hint when there is none', () => {
  const t = methodTimingText([{ method: 'Foo.work(I)', invocations: 200, minNs: 1_020_000, avgNs: 4_944_109, maxNs: 22_182_527 }, { method: 'Foo.rank([JD)', invocations: 2, minNs: null, avgNs: 18_000, maxNs: 36_000 }]);
  assert.match(t, /^Method\s+Calls\s+Min ms\s+Avg ms\s+Max ms$/m);
  assert.match(t, /^Foo\.work\(I\)\s+200\s+1\.020\s+4\.944\s+22\.183$/m);
  assert.match(t, /^Foo\.rank\(\[JD\)\s+2\s+-\s+0\.018\s+0\.036$/m);
  assert.match(methodTimingText([]), /--method-timing/);
});
