// One timing session's figures: exact count, sum and max, the log2 histogram in the session's unit
// (slot 0 = 0, slot i = [2^(i-1), 2^i)), the log-linear ns histogram percentiles are read from (32
// slots per power of two, the native tracer's layout), and the slowest calls above the threshold
// with their stacks. Lock-free on the fast path; the slow path takes a lock.
package ebpfstudio.latency;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

final class Session {
    static final int FINE_SLOTS = 1920, LOG2_SLOTS = 32, MAX_FRAMES = 48;
    final String id, out, what;
    final long threshold, unit;
    final int slowMax;
    final List<String> methods = Collections.synchronizedList(new ArrayList<>());
    final LongAdder sum = new LongAdder(), slowCalls = new LongAdder();
    /** lo[i]: the least duration (ns) of log2 slot i in the session's unit, unit << (i - 1) */
    private final long[] lo = new long[LOG2_SLOTS + 1];
    private final int unitBits;
    final AtomicLong max = new AtomicLong();
    final AtomicLongArray fine = new AtomicLongArray(FINE_SLOTS), log2 = new AtomicLongArray(LOG2_SLOTS);
    final PriorityQueue<Slow> slow = new PriorityQueue<>((a, b) -> Long.compare(a.d, b.d));
    long seq;
    volatile String state = "running";
    /** the slow calls' time windows, when they are profiled; set before the session is published */
    Windows windows;
    /** the figures per call site, when asked; set before the session is published */
    Callers callers;

    static final class Slow {
        long seq;
        final long d, end, tid;
        final StackTraceElement[] frames;

        Slow(long d, long end, long tid, StackTraceElement[] frames) {
            this.d = d;
            this.end = end;
            this.tid = tid;
            this.frames = frames;
        }
    }

    Session(String id, String out, String what, long threshold, long unit, int slowMax) {
        this.id = id == null ? "" : id;
        this.out = out;
        this.what = what;
        this.threshold = threshold;
        this.unit = Math.max(1, unit);
        this.slowMax = Math.max(1, Math.min(1000, slowMax));
        for (int i = 1; i <= LOG2_SLOTS; i++) lo[i] = i - 1 < Long.numberOfLeadingZeros(this.unit) - 1 ? this.unit << (i - 1) : Long.MAX_VALUE;
        unitBits = 63 - Long.numberOfLeadingZeros(this.unit);
    }

    /** log2Slot(d / unit) without the division (per call): from d's own octave, off by one at most. */
    int unitSlot(long d) {
        int i = Math.max(0, Math.min(LOG2_SLOTS - 1, 64 - Long.numberOfLeadingZeros(d) - unitBits));
        while (i < LOG2_SLOTS - 1 && d >= lo[i + 1]) i++;
        while (i > 0 && d < lo[i]) i--;
        return i;
    }

    /** Every call lands in exactly one fine slot: their sum is the exact count. */
    long count() {
        long n = 0;
        for (int i = 0; i < FINE_SLOTS; i++) n += fine.get(i);
        return n;
    }

    static int fineSlot(long ns) {
        if (ns < 32) return (int) ns;
        int octave = 63 - Long.numberOfLeadingZeros(ns);
        long slot = (long) (octave - 4) * 32 + ((ns >>> (octave - 5)) & 31);
        return (int) Math.min(slot, FINE_SLOTS - 1);
    }

    static int log2Slot(long v) {
        int s = v == 0 ? 0 : 64 - Long.numberOfLeadingZeros(v);
        return Math.min(s, LOG2_SLOTS - 1);
    }

    void record(long d) {
        if (d < 0) d = 0;
        sum.add(d);
        fine.incrementAndGet(fineSlot(d));
        log2.incrementAndGet(unitSlot(d));
        for (long m = max.get(); d > m && !max.compareAndSet(m, d); m = max.get()) { }
        if (threshold > 0 && d >= threshold) slow(d);
    }

    private void slow(long d) {
        slowCalls.increment();
        synchronized (slow) {
            if (slow.size() >= slowMax && slow.peek().d >= d) return;
        }
        StackTraceElement[] all = new Throwable().getStackTrace();
        int skip = 0;
        while (skip < all.length && all[skip].getClassName().startsWith("ebpfstudio.latency.")) skip++;
        StackTraceElement[] frames = java.util.Arrays.copyOfRange(all, skip, Math.min(all.length, skip + MAX_FRAMES));
        Slow s = new Slow(d, System.nanoTime(), Thread.currentThread().getId(), frames);
        synchronized (slow) {
            s.seq = ++seq;
            slow.add(s);
            if (slow.size() > slowMax) slow.poll();
        }
    }

    List<Slow> slowest() {
        synchronized (slow) {
            return new ArrayList<>(slow);
        }
    }
}
