// Writes the session's snapshot every interval until the session stops.
package ebpfstudio.latency;

final class Writer extends Thread {
    private final Session s;
    private final long intervalMs;
    private volatile boolean done;

    Writer(Session s, long intervalMs) {
        super("ebpf-studio-latency");
        setDaemon(true);
        this.s = s;
        this.intervalMs = intervalMs;
    }

    @Override
    public void run() {
        while (!done) {
            try {
                Thread.sleep(intervalMs);
            } catch (InterruptedException e) {
                break;
            }
            if (!done) Snapshot.write(s);
        }
    }

    void finish() throws InterruptedException {
        done = true;
        interrupt();
        join(2000);
    }
}
