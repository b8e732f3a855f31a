// The snapshot file: one small JSON document ("v":1), replaced whole (written beside it, then
// renamed over it) so a reader never sees half of one. Bounded: at most FINE_SLOTS pairs, the
// session's slowest calls with MAX_FRAMES frames each, strings cut at 300 characters.
package ebpfstudio.latency;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

final class Snapshot {
    private Snapshot() { }

    static synchronized void write(Session s) {
        StringBuilder b = new StringBuilder(4096);
        b.append("{\"v\":1,\"state\":").append(str(s.state)).append(",\"id\":").append(str(s.id)).append(",\"t\":").append(System.nanoTime());
        b.append(",\"count\":").append(s.count()).append(",\"sum\":").append(s.sum.sum()).append(",\"max\":").append(s.max.get()).append(",\"slowCalls\":").append(s.slowCalls.sum());
        if (s.windows != null) s.windows.write(b);
        if (s.callers != null) s.callers.write(b);
        b.append(",\"methods\":[");
        synchronized (s.methods) {
            for (int i = 0; i < s.methods.size() && i < 50; i++) b.append(i > 0 ? "," : "").append(str(s.methods.get(i)));
        }
        b.append("],\"log2\":[");
        for (int i = 0; i < Session.LOG2_SLOTS; i++) b.append(i > 0 ? "," : "").append(s.log2.get(i));
        b.append("],\"fine\":[");
        boolean first = true;
        for (int i = 0; i < Session.FINE_SLOTS; i++) {
            long n = s.fine.get(i);
            if (n == 0) continue;
            b.append(first ? "" : ",").append('[').append(i).append(',').append(n).append(']');
            first = false;
        }
        b.append("],\"slow\":[");
        first = true;
        for (Session.Slow c : s.slowest()) {
            b.append(first ? "" : ",").append("{\"seq\":").append(c.seq).append(",\"d\":").append(c.d).append(",\"end\":").append(c.end).append(",\"tid\":").append(c.tid).append(",\"frames\":[");
            for (int i = 0; i < c.frames.length; i++) {
                StackTraceElement f = c.frames[i];
                b.append(i > 0 ? "," : "").append('[').append(str(f.getClassName())).append(',').append(str(f.getMethodName())).append(',').append(str(f.getFileName())).append(',').append(f.getLineNumber()).append(']');
            }
            b.append("]}");
            first = false;
        }
        b.append("]}\n");
        put(s.out, b.toString());
    }

    static void writeError(String out, String message) {
        put(out, "{\"v\":1,\"state\":\"error\",\"error\":" + str(message) + "}\n");
    }

    private static void put(String out, String text) {
        try {
            Path p = Paths.get(out), tmp = Paths.get(out + ".new");
            Files.write(tmp, text.getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, p, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (Throwable e) {
            // the reader reports the snapshot missing
        }
    }

    static String str(String v) {
        if (v == null) return "null";
        StringBuilder b = new StringBuilder(v.length() + 2).append('"');
        for (int i = 0; i < v.length() && i < 300; i++) {
            char c = v.charAt(i);
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
