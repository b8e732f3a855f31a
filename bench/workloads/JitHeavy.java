// JIT-heavy Java workload for the Java-agent overhead rows (issue 14): many small methods,
// polymorphic calls, string hashing and hash-map lookups, recursion, so compiled code, inlining
// and deep Java stacks dominate. It allocates nothing once warm: with records, boxing and string
// building in the loop, 2 s rounds swung by +-25 % on this VM (allocation at GB/s is at the mercy
// of the host's memory bandwidth), far more than the 1 % being measured. Prints "ready"; for every line "S" on stdin works S seconds and prints
// "ops_per_sec N".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;

public class JitHeavy {
    interface Shape { double area(); }
    record Circle(double r) implements Shape { public double area() { return Math.PI * r * r; } }
    record Rect(double w, double h) implements Shape { public double area() { return w * h; } }
    record Tri(double b, double h) implements Shape { public double area() { return 0.5 * b * h; } }

    static volatile long sink;

    static Shape make(int i) {
        switch (i % 3) {
            case 0: return new Circle(i % 7);
            case 1: return new Rect(i % 5, i % 11);
            default: return new Tri(i % 13, i % 3);
        }
    }

    // Built once: the calls stay polymorphic (three receiver types at one site) without
    // allocating, so the rounds measure compiled code rather than the allocator and GC.
    static final Shape[] SHAPES = new Shape[3 * 7 * 11 * 13];
    static {
        for (int i = 0; i < SHAPES.length; i++) SHAPES[i] = make(i);
    }

    static double shapes(int n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += SHAPES[i % SHAPES.length].area();
        return s;
    }

    static final String[] KEYS = new String[97];
    static final Map<String, int[]> COUNTS = new HashMap<>();
    static {
        for (int i = 0; i < 97; i++) {
            KEYS[i] = "w" + i;
            COUNTS.put(KEYS[i], new int[1]);
        }
    }

    static int words(int n) {
        int hits = 0;
        for (int i = 0; i < n; i++) hits += ++COUNTS.get(KEYS[i % 97])[0] & 1;
        return hits;
    }

    static long recurse(int depth, long acc) {
        return depth == 0 ? acc : recurse(depth - 1, acc * 31 + depth);
    }

    static long op(int i) {
        return (long) shapes(200) + words(100) + recurse(20 + i % 10, i);
    }

    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            long end = System.nanoTime() + (long) (Double.parseDouble(line.trim()) * 1e9);
            long ops = 0, t0 = System.nanoTime();
            while (System.nanoTime() < end) {
                sink += op((int) ops);
                ops++;
            }
            System.out.println("ops_per_sec " + (long) (ops / ((System.nanoTime() - t0) / 1e9)));
        }
    }
}
