// Writes the session's snapshot every interval until the session stops. The reader keeps a lease
// file beside the snapshot fresh while it reads; when it goes stale (the reader died without
// saying stop), the session stops itself: the class is put back and the files removed, so no
// timing outlives the tool that asked for it.
package ebpfstudio.latency;

import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Paths;

final class Writer extends Thread {
    private final Session s;
    private final long intervalMs, leaseMs;
    private volatile boolean done;

    Writer(Session s, long intervalMs, long leaseMs) {
        super("ebpf-studio-latency");
        setDaemon(true);
        this.s = s;
        this.intervalMs = intervalMs;
        this.leaseMs = leaseMs;
    }

    private boolean leaseLapsed() {
        if (leaseMs <= 0) return false;
        try {
            long age = System.currentTimeMillis() - Files.getLastModifiedTime(Paths.get(s.out + ".lease"), LinkOption.NOFOLLOW_LINKS).toMillis();
            return age > leaseMs;
        } catch (Exception e) {
            return true; // removed: nobody reads any more
        }
    }

    @Override
    public void run() {
        while (!done) {
            try {
                Thread.sleep(intervalMs);
            } catch (InterruptedException e) {
                break;
            }
            if (done) break;
            if (leaseLapsed()) {
                Control.abandon(s.id);
                break;
            }
            Snapshot.write(s);
        }
    }

    void finish() throws InterruptedException {
        done = true;
        if (Thread.currentThread() == this) return;
        interrupt();
        join(2000);
    }
}
