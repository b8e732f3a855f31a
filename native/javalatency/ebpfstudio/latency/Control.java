// Starts and stops one timing session in this JVM. A session retransforms the chosen class(es)
// through a ClassFileTransformer that wraps the method(s) (Rewriter); stopping removes the
// transformer and retransforms again, which rebuilds the class from its original bytes.
package ebpfstudio.latency;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

final class Control {
    private static Instrumentation inst;
    private static ClassFileTransformer transformer;
    private static Class<?>[] targets;
    private static Writer writer;

    private Control() { }

    static synchronized void start(Instrumentation in, Map<String, String> o) throws Exception {
        String out = o.get("out");
        if (Recorder.session != null) {
            Snapshot.writeError(out, "another latency session is running in this JVM (" + Recorder.session.what + "): stop it first");
            return;
        }
        openAsm(in);
        Rewriter.reset();
        String cls = need(o, "class"), method = need(o, "method"), desc = o.getOrDefault("desc", "");
        Class<?>[] found = find(in, cls);
        Session s = new Session(o.get("id"), out, cls + "." + method + desc, Long.parseLong(need(o, "threshold")), Long.parseLong(need(o, "unit")), Integer.parseInt(o.getOrDefault("slow", "100")));
        if ("1".equals(o.get("profile"))) s.windows = new Windows();
        if ("1".equals(o.get("callers"))) s.callers = new Callers();
        ClassFileTransformer t = Rewriter.transformer(found, method, desc, s.methods, s.callers != null);
        in.addTransformer(t, true);
        try {
            in.retransformClasses(found);
        } catch (Throwable e) {
            in.removeTransformer(t);
            restore(in, found);
            throw new IllegalStateException("rewriting " + cls + " failed: " + e);
        }
        if (s.methods.isEmpty()) {
            in.removeTransformer(t);
            restore(in, found);
            throw new IllegalStateException("no method " + method + desc + " with code in " + cls + Rewriter.lastNames());
        }
        inst = in;
        transformer = t;
        targets = found;
        Recorder.session = s;
        lastId = s.id;
        lastOut = s.out;
        Snapshot.write(s); // the first, before the attach command returns: the helper reads it next
        writer = new Writer(s, Math.max(100, Integer.parseInt(o.getOrDefault("interval", "1000"))), Long.parseLong(o.getOrDefault("lease", "0")));
        writer.start();
    }

    static synchronized void stop(String id) throws Exception {
        Session s = Recorder.session;
        if (s == null || !s.id.equals(id)) return;
        inst.removeTransformer(transformer);
        restore(inst, targets);
        Recorder.session = null;
        writer.finish();
        s.state = "stopped";
        Snapshot.write(s);
        inst = null;
        transformer = null;
        targets = null;
        writer = null;
    }

    /** The reader is gone: stop, and remove what only it would have read. */
    static void abandon(String id) {
        try {
            stop(id);
        } catch (Throwable e) {
            // stop did what it could
        }
        for (String f : new String[] {outOf(id), outOf(id) + ".lease"}) {
            try {
                if (f != null) java.nio.file.Files.deleteIfExists(java.nio.file.Paths.get(f));
            } catch (Throwable e) {
                // gone already
            }
        }
    }

    private static String lastOut, lastId;

    private static synchronized String outOf(String id) {
        return id != null && id.equals(lastId) ? lastOut : null;
    }

    private static void restore(Instrumentation in, Class<?>[] cs) {
        try {
            in.retransformClasses(cs);
        } catch (Throwable e) {
            // the class keeps the timing calls; with no session they record nothing
        }
    }

    private static String need(Map<String, String> o, String k) {
        String v = o.get(k);
        if (v == null || v.isEmpty()) throw new IllegalArgumentException("the agent's options lack " + k);
        return v;
    }

    /** The loaded classes named `cls` (a full name, or the simple name in any package). */
    static Class<?>[] find(Instrumentation in, String cls) {
        List<Class<?>> exact = new ArrayList<>(), simple = new ArrayList<>();
        Set<String> names = new TreeSet<>();
        boolean dotted = cls.indexOf('.') >= 0;
        for (Class<?> c : in.getAllLoadedClasses()) {
            String n = c.getName();
            if (c.isArray() || c.isPrimitive()) continue;
            if (n.equals(cls)) exact.add(c);
            else if (!dotted && (n.endsWith("." + cls) || n.endsWith("$" + cls)) && !n.contains("$$Lambda")) { simple.add(c); names.add(n); }
        }
        List<Class<?>> use = exact.isEmpty() ? simple : exact;
        if (use.isEmpty()) throw new IllegalStateException("class " + cls + " is not loaded in this JVM (not used yet, or misspelt): run the code that uses it, then measure again");
        if (exact.isEmpty() && names.size() > 1) throw new IllegalStateException("several loaded classes are named " + cls + ": " + String.join(", ", names) + ": give the full name");
        for (Class<?> c : use) {
            if (!in.isModifiableClass(c)) throw new IllegalStateException("class " + c.getName() + " cannot be retransformed by this JVM");
            ClassLoader l = c.getClassLoader();
            Class<?> seen;
            try {
                seen = Class.forName(Recorder.class.getName(), false, l);
            } catch (Throwable e) {
                seen = null;
            }
            if (seen != Recorder.class) throw new IllegalStateException("class " + c.getName() + " is loaded by " + l + ", which cannot see the agent's recorder: its methods cannot be timed");
        }
        return use.toArray(new Class<?>[0]);
    }

    /** Lets this agent's module use java.base's internal ASM (not exported to anyone by default). */
    private static void openAsm(Instrumentation in) {
        Module base = Object.class.getModule(), me = Control.class.getModule();
        Map<String, Set<Module>> ex = new java.util.HashMap<>();
        for (String p : new String[] {"jdk.internal.org.objectweb.asm", "jdk.internal.org.objectweb.asm.commons"}) {
            if (!base.getPackages().contains(p)) throw new IllegalStateException("this JDK has no internal ASM (" + p + "): the JDK 17-23 agent path cannot run on it");
            ex.put(p, Collections.singleton(me));
        }
        in.redefineModule(base, Collections.emptySet(), ex, Collections.emptyMap(), Collections.emptySet(), Collections.emptyMap());
    }
}
