// "By caller": the session's figures per call site (the calling method and the bytecode index of
// the call, shown by its line), made only when asked: the rewritten method then calls
// Recorder.exitCaller, which walks the stack to the frame below the method (StackWalker: the JVM's
// own walk, no Throwable and no whole stack copied). Bounded: the first MAX_SITES call sites get
// their own figures, every later one is counted in `other`, so a method called from generated code
// at countless sites cannot grow this.
package ebpfstudio.latency;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Function;
import java.util.stream.Stream;

final class Callers {
    static final int MAX_SITES = 256;
    /** the walk needs 4 frames (record, exitCaller, the method, its caller): the first batch fetched no larger */
    private static final StackWalker WALKER = StackWalker.getInstance(Collections.emptySet(), 4);
    /** our own frames, then the measured method's, then its caller's */
    private static final Function<Stream<StackWalker.StackFrame>, Optional<StackWalker.StackFrame>> CALLER =
        s -> s.dropWhile(f -> f.getClassName().startsWith("ebpfstudio.latency.")).skip(1).findFirst();

    /** One call site's figures; cls null: the calls from sites beyond MAX_SITES. */
    static final class Site {
        final String cls, method, file;
        final int line;
        final AtomicLong count = new AtomicLong(), sum = new AtomicLong(), max = new AtomicLong();
        final AtomicLongArray log2 = new AtomicLongArray(Session.LOG2_SLOTS);

        Site(String cls, String method, String file, int line) {
            this.cls = cls;
            this.method = method;
            this.file = file;
            this.line = line;
        }

        void add(long d, int slot) {
            count.incrementAndGet();
            sum.addAndGet(d);
            log2.incrementAndGet(slot);
            for (long m = max.get(); d > m && !max.compareAndSet(m, d); m = max.get()) { }
        }
    }

    /**
     * A call site's identity: the class, method and bytecode index of the call. Not its line: a
     * frame's line and file are looked up through a StackTraceElement made for them, which costs
     * a fifth of the walk on every call; they are read once, when the site is first seen.
     */
    private static final class Key {
        final String cls, method;
        final int bci, hash;

        Key(String cls, String method, int bci) {
            this.cls = cls;
            this.method = method;
            this.bci = bci;
            this.hash = (cls.hashCode() * 31 + method.hashCode()) * 31 + bci;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Key)) return false;
            Key k = (Key) o;
            return k.hash == hash && k.bci == bci && k.cls.equals(cls) && k.method.equals(method);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private final ConcurrentHashMap<Key, Site> sites = new ConcurrentHashMap<>();
    final Site other = new Site(null, null, null, 0);

    /** Counts one call of d ns (log2 slot `slot` in the session's unit) at its caller's site. */
    void record(long d, int slot) {
        StackWalker.StackFrame f = WALKER.walk(CALLER).orElse(null);
        if (f == null) {
            other.add(d, slot);
            return;
        }
        Key k = new Key(f.getClassName(), f.getMethodName(), f.getByteCodeIndex());
        Site s = sites.get(k);
        if (s == null) s = add(k, f);
        s.add(d, slot);
    }

    private synchronized Site add(Key k, StackWalker.StackFrame f) {
        Site s = sites.get(k);
        if (s != null) return s;
        if (sites.size() >= MAX_SITES) return other;
        s = new Site(k.cls, k.method, sourceOf(k.cls, f.getFileName()), f.getLineNumber());
        sites.put(k, s);
        return s;
    }

    /** The source file under its package's directory, as JFR's frames name it: com/x/Foo.java. */
    static String sourceOf(String cls, String file) {
        if (file == null) return null;
        int dot = cls.lastIndexOf('.');
        return dot < 0 ? file : cls.substring(0, dot + 1).replace('.', '/') + file;
    }

    List<Site> all() {
        return new ArrayList<>(sites.values());
    }

    /** Appends ,"callers":{"max":N,"sites":[[cls,method,file,line,count,sum,max,[log2]],...],"other":[count,sum,max,[log2]]}. */
    void write(StringBuilder b) {
        b.append(",\"callers\":{\"max\":").append(MAX_SITES).append(",\"sites\":[");
        boolean first = true;
        for (Site s : all()) {
            b.append(first ? "[" : ",[").append(Snapshot.str(s.cls)).append(',').append(Snapshot.str(s.method)).append(',').append(Snapshot.str(s.file)).append(',').append(Math.max(0, s.line)).append(',');
            figures(b, s);
            b.append(']');
            first = false;
        }
        b.append("],\"other\":[");
        figures(b, other);
        b.append("]}");
    }

    private static void figures(StringBuilder b, Site s) {
        b.append(s.count.get()).append(',').append(s.sum.get()).append(',').append(s.max.get()).append(",[");
        for (int i = 0; i < Session.LOG2_SLOTS; i++) b.append(i > 0 ? "," : "").append(s.log2.get(i));
        b.append(']');
    }
}
