// What the rewritten methods call on return: one static call, no allocation unless the call is
// slower than the threshold. Public because the rewritten classes call it from their own packages.
package ebpfstudio.latency;

public final class Recorder {
    /** The running session; null between sessions (a call still in flight then records nothing). */
    static volatile Session session;

    private Recorder() { }

    public static void exit(long start) {
        long d = System.nanoTime() - start;
        Session s = session;
        if (s != null) s.record(d);
    }
}
