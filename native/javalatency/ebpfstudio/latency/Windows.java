// "Profile the slow calls" on the Java side: the time windows (native thread id, start, end, in
// System.nanoTime, which is CLOCK_MONOTONIC on Linux like bpf_ktime_get_ns) of the outermost calls
// slower than the threshold, for the tool to keep only the wall-clock samples taken inside them.
// Bounded: a ring of the last RING windows (each snapshot carries them all with their sequence
// numbers, so the reader sees what it missed), and one small state per calling thread. The state
// also says which outermost calls are still running, so the snapshot can give a horizon: every
// slow call that started before it has ended and is in the ring, so samples older than it can be
// decided.
package ebpfstudio.latency;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

final class Windows {
    static final int RING = 1024;

    /** One calling thread: its native tid (in the JVM's pid namespace), depth, outermost call's start (0: none running). */
    static final class PerThread {
        /** -1 until read; 0 while being read (a measured method called by the read itself) or unknown */
        long tid = -1;
        int depth;
        volatile long outerStart;
    }

    private final ThreadLocal<PerThread> mine = ThreadLocal.withInitial(PerThread::new);
    /** Weak: a thread that ended leaves nothing behind. */
    private final Map<Thread, PerThread> threads = new WeakHashMap<>();
    private final long[] ring = new long[RING * 3];
    private long seq;

    private PerThread mine() {
        PerThread p = mine.get();
        if (p.tid < 0) {
            p.tid = 0;
            synchronized (threads) {
                threads.put(Thread.currentThread(), p);
            }
            p.tid = nativeTid();
        }
        return p;
    }

    /** Read once per thread: the link /proc/thread-self names PID/task/TID. */
    private static long nativeTid() {
        try {
            String l = Files.readSymbolicLink(Paths.get("/proc/thread-self")).toString();
            return Long.parseLong(l.substring(l.lastIndexOf('/') + 1));
        } catch (Throwable e) {
            return 0; // no /proc: its windows match no sample
        }
    }

    void enter(long start) {
        PerThread p = mine();
        if (p.depth++ == 0) p.outerStart = start;
    }

    void exit(long start, long end, boolean slow) {
        PerThread p = mine();
        if (p.depth == 0) return; // entered before the session began
        if (--p.depth > 0) return; // an inner call: inside the outer one's window
        if (slow) add(p.tid, start, end);
        p.outerStart = 0; // after the window is in the ring (see horizon)
    }

    private synchronized void add(long tid, long start, long end) {
        int i = (int) (seq % RING) * 3;
        ring[i] = tid;
        ring[i + 1] = start;
        ring[i + 2] = end;
        seq++;
    }

    /** Now, or the start of the oldest outermost call still running; read before the ring is copied. */
    long horizon() {
        long h = System.nanoTime();
        synchronized (threads) {
            for (PerThread p : threads.values()) {
                long s = p.outerStart;
                if (s != 0 && s < h) h = s;
            }
        }
        return h;
    }

    /** The windows in the ring, each as seq, tid, start, end. */
    synchronized List<long[]> copy() {
        List<long[]> out = new ArrayList<>();
        for (long k = Math.max(0, seq - RING); k < seq; k++) {
            int i = (int) (k % RING) * 3;
            out.add(new long[] {k + 1, ring[i], ring[i + 1], ring[i + 2]});
        }
        return out;
    }

    /** Appends ,"horizon":H,"windows":[[seq,tid,start,end],...] to a snapshot. */
    void write(StringBuilder b) {
        long h = horizon();
        b.append(",\"horizon\":").append(h).append(",\"windows\":[");
        boolean first = true;
        for (long[] w : copy()) {
            b.append(first ? "" : ",").append('[').append(w[0]).append(',').append(w[1]).append(',').append(w[2]).append(',').append(w[3]).append(']');
            first = false;
        }
        b.append(']');
    }
}
