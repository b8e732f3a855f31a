// Demo workload for "Trace Java GC": allocates steadily (young GCs) and asks for a full GC
// every 10 seconds, forever.
import java.util.ArrayList;
import java.util.List;

public class DemoGc {
    public static void main(String[] args) throws Exception {
        List<byte[]> keep = new ArrayList<>();
        long last = System.currentTimeMillis();
        while (true) {
            for (int i = 0; i < 2000; i++) {
                byte[] b = new byte[1024 + (i % 7) * 512];
                if (i % 50 == 0) keep.add(b);
            }
            if (keep.size() > 20000) keep.subList(0, 10000).clear();
            if (System.currentTimeMillis() - last > 10_000) {
                System.gc();
                last = System.currentTimeMillis();
            }
            Thread.sleep(5);
        }
    }
}
