// JFR method timing/tracing cost per call (bench/jfrMethodTrace.ts): calls step() N times after a
// warm-up and prints the wall time per call measured with System.nanoTime().
public class MethodCalls {
    static long acc;

    static long step(long x) {
        acc = acc * 31 + x;
        return acc;
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        for (int i = 0; i < 200_000; i++) step(i);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) step(i);
        long ns = System.nanoTime() - t0;
        System.out.println("nsPerCall=" + ((double) ns / n) + " acc=" + acc);
    }
}
