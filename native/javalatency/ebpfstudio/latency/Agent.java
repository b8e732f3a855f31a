// The entry of eBPF Studio's method-latency agent, loaded into a running JVM (JDK 17 to 23) by the
// HotSpot attach `load instrument` command. Each load is one command: `start,...` wraps the chosen
// method(s) with timing and starts the snapshot writer; `stop,id=...` puts the class back. The
// outcome is written into the snapshot file named by `out` (never thrown: an exception out of
// agentmain would be printed on the application's stderr), where the helper reads it.
package ebpfstudio.latency;

import java.lang.instrument.Instrumentation;
import java.util.HashMap;
import java.util.Map;

public final class Agent {
    private Agent() { }

    public static void agentmain(String args, Instrumentation inst) {
        Map<String, String> o = parse(args == null ? "" : args);
        String out = o.get("out");
        if (out == null || !out.startsWith("/tmp/")) return; // nowhere to answer: a stray load
        try {
            if (args.startsWith("stop,")) Control.stop(o.get("id"));
            else if (args.startsWith("start,")) Control.start(inst, o);
        } catch (Throwable t) {
            Snapshot.writeError(out, String.valueOf(t.getMessage() == null ? t : t.getMessage()));
        }
    }

    static Map<String, String> parse(String args) {
        Map<String, String> o = new HashMap<>();
        for (String kv : args.split(",")) {
            int eq = kv.indexOf('=');
            if (eq > 0) o.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return o;
    }
}
