// What the rewritten methods call on return: one static call, no allocation unless the call is
// slower than the threshold. Public because the rewritten classes call it from their own packages.
package ebpfstudio.latency;

public final class Recorder {
    /** The running session; null between sessions (a call still in flight then records nothing). */
    static volatile Session session;

    private Recorder() { }

    /** The call's start; with the slow calls profiled, the thread's outermost call is tracked too. */
    public static long enter() {
        long t = System.nanoTime();
        Session s = session;
        if (s != null && s.windows != null) s.windows.enter(t);
        return t;
    }

    public static void exit(long start) {
        long end = System.nanoTime(), d = end - start;
        Session s = session;
        if (s == null) return;
        s.record(d);
        if (s.windows != null) s.windows.exit(start, end, s.threshold > 0 && d >= s.threshold);
    }

    /** exit, and the call counted at its caller's site: called instead of exit only when the
     * session asked for figures by caller, so the plain path pays nothing for it. */
    public static void exitCaller(long start) {
        long end = System.nanoTime(), d = end - start;
        Session s = session;
        if (s == null) return;
        s.record(d);
        if (s.callers != null) s.callers.record(Math.max(0, d), s.unitSlot(Math.max(0, d)));
        if (s.windows != null) s.windows.exit(start, end, s.threshold > 0 && d >= s.threshold);
    }
}
