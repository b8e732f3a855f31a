// Wraps the chosen method(s) of a class with timing: System.nanoTime() at entry into a new local,
// Recorder.exit(start) (exitCaller, when figures by caller are asked) before every return, and a
// catch-all handler over the whole body that records and rethrows, so calls that end by an
// exception (thrown here or below) are timed too.
// Written with java.base's own ASM (jdk.internal.org.objectweb.asm, present in JDK 17 to 23)
// rather than a class-file rewriter of our own: stack-map frames must be recomputed after adding
// a handler, and ASM's frame computation and AdviceAdapter's constructor/exit tracking are
// mature code we would otherwise have to write and get right for every bytecode shape; taking the
// JDK's copy means the agent ships no third-party library and matches the JVM's class versions.
package ebpfstudio.latency;

import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import jdk.internal.org.objectweb.asm.ClassReader;
import jdk.internal.org.objectweb.asm.ClassVisitor;
import jdk.internal.org.objectweb.asm.ClassWriter;
import jdk.internal.org.objectweb.asm.Label;
import jdk.internal.org.objectweb.asm.MethodVisitor;
import jdk.internal.org.objectweb.asm.Opcodes;
import jdk.internal.org.objectweb.asm.Type;
import jdk.internal.org.objectweb.asm.commons.AdviceAdapter;

final class Rewriter {
    private static final Set<String> seen = new TreeSet<>();
    private static final int API = api();

    private Rewriter() { }

    private static int api() {
        try {
            return Opcodes.class.getField("ASM9").getInt(null);
        } catch (ReflectiveOperationException e) {
            return Opcodes.ASM8; // JDK 17's copy: sealed classes are refused by the visitor
        }
    }

    static void reset() {
        synchronized (seen) {
            seen.clear();
        }
    }

    static String lastNames() {
        synchronized (seen) {
            return seen.isEmpty() ? "" : " (its methods: " + String.join(", ", seen) + ")";
        }
    }

    static ClassFileTransformer transformer(Class<?>[] targets, String method, String desc, List<String> matched, boolean byCaller) {
        Set<Class<?>> set = new HashSet<>(Arrays.asList(targets));
        return new ClassFileTransformer() {
            @Override
            public byte[] transform(ClassLoader l, String name, Class<?> c, ProtectionDomain pd, byte[] bytes) {
                if (c == null || !set.contains(c)) return null;
                return rewrite(bytes, l, method, desc, matched, byCaller);
            }
        };
    }

    static byte[] rewrite(byte[] bytes, ClassLoader loader, String method, String desc, List<String> matched, boolean byCaller) {
        ClassReader r = new ClassReader(bytes);
        ClassWriter w = new ClassWriter(r, ClassWriter.COMPUTE_FRAMES) {
            @Override
            protected String getCommonSuperClass(String a, String b) {
                return commonSuper(loader, a, b);
            }
        };
        int before = matched.size();
        r.accept(new ClassVisitor(API, w) {
            private String owner;

            @Override
            public void visit(int v, int acc, String name, String sig, String sup, String[] itf) {
                owner = name;
                super.visit(v, acc, name, sig, sup, itf);
            }

            @Override
            public MethodVisitor visitMethod(int acc, String name, String d, String sig, String[] exc) {
                MethodVisitor mv = super.visitMethod(acc, name, d, sig, exc);
                synchronized (seen) {
                    if (seen.size() < 40) seen.add(name);
                }
                if (!name.equals(method) || (!desc.isEmpty() && !desc.equals(d)) || (acc & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0) return mv;
                matched.add(owner.replace('/', '.') + "." + name + d);
                return new Timing(mv, acc, name, d, byCaller ? "exitCaller" : "exit");
            }
        }, ClassReader.EXPAND_FRAMES);
        return matched.size() == before ? null : w.toByteArray();
    }

    /** ASM's default resolution, but through the class's own loader (ASM's would use the boot loader). */
    private static String commonSuper(ClassLoader loader, String a, String b) {
        try {
            Class<?> x = Class.forName(a.replace('/', '.'), false, loader), y = Class.forName(b.replace('/', '.'), false, loader);
            if (x.isAssignableFrom(y)) return a;
            if (y.isAssignableFrom(x)) return b;
            if (x.isInterface() || y.isInterface()) return "java/lang/Object";
            do x = x.getSuperclass(); while (!x.isAssignableFrom(y));
            return x.getName().replace('.', '/');
        } catch (Throwable e) {
            return "java/lang/Object";
        }
    }

    private static final class Timing extends AdviceAdapter {
        private static final Type RECORDER = Type.getType(Recorder.class);
        private final Label from = new Label(), handler = new Label();
        private final String exit;
        private int start;

        Timing(MethodVisitor mv, int acc, String name, String desc, String exit) {
            super(API, mv, acc, name, desc);
            this.exit = exit;
        }

        @Override
        protected void onMethodEnter() {
            start = newLocal(Type.LONG_TYPE);
            mv.visitMethodInsn(INVOKESTATIC, RECORDER.getInternalName(), "enter", "()J", false);
            mv.visitVarInsn(LSTORE, start);
            mv.visitLabel(from);
        }

        @Override
        protected void onMethodExit(int opcode) {
            if (opcode != ATHROW) record(); // a throw is timed by the handler below
        }

        private void record() {
            mv.visitVarInsn(LLOAD, start);
            mv.visitMethodInsn(INVOKESTATIC, RECORDER.getInternalName(), exit, "(J)V", false);
        }

        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            // Appended last, so the method's own handlers are searched first.
            mv.visitLabel(handler);
            record();
            mv.visitInsn(ATHROW);
            mv.visitTryCatchBlock(from, handler, handler, null);
            super.visitMaxs(maxStack, maxLocals);
        }
    }
}
