// JIT-heavy Java workload for the Java-agent overhead rows (issue 14): many small methods,
// polymorphic calls, boxing, strings and hash maps, so compiled code, inlining and deep Java stacks
// dominate. Prints "ready"; for every line "S" on stdin works S seconds and prints
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

    static double shapes(int n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += make(i).area();
        return s;
    }

    static int words(int n) {
        Map<String, Integer> m = new HashMap<>();
        for (int i = 0; i < n; i++) m.merge("w" + (i % 97), 1, Integer::sum);
        return m.size();
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
