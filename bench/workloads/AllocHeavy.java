import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

// One thread allocating at a fixed pace (default 500 MB/s) in a mix of sizes that die young.
// Command "<seconds>" on stdin: allocate for that long, then print
// "alloc_cpu <ns of the allocating thread's CPU time> <bytes allocated> <ns wall>", so the cost
// of a heap sampler shows as more CPU per byte in the thread that allocates.
public class AllocHeavy {
  static final Object[] SINK = new Object[8192];
  static int cursor;

  static long allocate(long bytes) {
    long done = 0;
    int i = cursor;
    while (done < bytes) {
      SINK[i++ & 8191] = new byte[4096];
      SINK[i++ & 8191] = new long[64];
      for (int k = 0; k < 8; k++) SINK[i++ & 8191] = new char[24];
      SINK[i++ & 8191] = new Object[32];
      done += 4112 + 528 + 8 * 64 + 144;
    }
    cursor = i;
    return done;
  }

  public static void main(String[] args) throws Exception {
    long rate = args.length > 0 ? Long.parseLong(args[0]) : 500_000_000L;
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    System.out.println("ready");
    for (String line; (line = in.readLine()) != null; ) {
      double seconds = Double.parseDouble(line.trim());
      long t0 = System.nanoTime();
      long c0 = mx.getCurrentThreadCpuTime();
      long total = 0;
      long end = t0 + (long) (seconds * 1e9);
      // 1 ms slices: allocate a slice's share, then sleep to the slice's end
      for (long slice = t0; slice < end; slice += 1_000_000L) {
        total += allocate(rate / 1000);
        long wait = slice + 1_000_000L - System.nanoTime();
        if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
      }
      long c1 = mx.getCurrentThreadCpuTime();
      System.out.println("alloc_cpu " + (c1 - c0) + " " + total + " " + (System.nanoTime() - t0));
    }
  }
}
