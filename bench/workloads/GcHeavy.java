// GC-heavy Java workload for the java-gc overhead row. Run with -XX:+UseSerialGC -Xmx64m.
// Prints "ready", then for every "MB" line on stdin allocates MB megabytes of short-lived
// objects (small arrays and linked nodes, a small live window so young GCs stay cheap but
// frequent) and prints "ms X gcs N" (elapsed milliseconds, collections during the round).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

public class GcHeavy {
    static final class Node {
        Node next;
        long[] payload;
        Node(Node next, int n) {
            this.next = next;
            this.payload = new long[n];
            for (int j = 0; j < n; j++) payload[j] = j * 31L + n; // some work per byte, as real code does
        }
    }

    static volatile Object sink;

    static long gcCount() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) n += gc.getCollectionCount();
        return n;
    }

    static void round(long mb) {
        long bytes = mb * 1024 * 1024, done = 0;
        Node[] window = new Node[4096];
        int i = 0;
        while (done < bytes) {
            int n = 4 + (i & 31);
            // Every 8th node points at its predecessor in the window: some survive one young GC.
            window[i & 4095] = new Node((i & 7) == 0 ? window[(i - 1) & 4095] : null, n);
            done += 16L + 8L * n + 32;
            i++;
        }
        sink = window;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            long mb = Long.parseLong(line.trim());
            long g0 = gcCount(), t0 = System.nanoTime();
            round(mb);
            long ns = System.nanoTime() - t0;
            System.out.println("ms " + (ns / 1e6) + " gcs " + (gcCount() - g0));
            System.out.flush();
        }
    }
}
