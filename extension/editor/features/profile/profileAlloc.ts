// "Java: allocations" in the Profile CPU picker for a JVM: a flame graph of the bytes each Java
// stack allocated (the allocated class as the leaf frame), from the java-heap tracer's sampled
// allocations (extension/tracers/javaHeap). Widths are estimated bytes; the graph grows while
// sampling. No commands of its own: ./profile.ts calls it and lends its flame graph panel.
import type * as vscode from 'vscode';
import { JAVA_HEAP_DEFAULT_INTERVAL_BYTES, type JavaHeapResult } from '../../../protocol/javaHeap';
import type { ProfileResult } from '../../../protocol/profile';
import { toAllocProfile } from '../../../model/javaHeapReport';
import { fromProfileResult, type FlameProfile } from '../../../model/flamegraph/profileData';
import { startSession } from '../../sessions/liveSessions';
import type { FromView, ToView } from '../../../../webview/flamegraph/protocol';
import type { TypedPanel } from '../../ui/webviewPanel';

interface Panel {
  panel: TypedPanel<ToView, FromView>;
  post(m: ToView): void;
  profile?: FlameProfile;
  result?: ProfileResult;
}

/** The flame graph weighs stacks by count: bytes go there (the view's numbers are then bytes). */
function byBytes(r: JavaHeapResult, comm: string): ProfileResult {
  const p = toAllocProfile(r, comm);
  return { ...p, stacks: p.stacks.map((s) => ({ ...s, count: s.value ?? 0 })) };
}

export async function profileAllocations(context: vscode.ExtensionContext, target: { pid: number; label: string }, durationS: number | null, openPanel: (context: vscode.ExtensionContext, title: string, onStop?: () => void) => Panel): Promise<string> {
  const title = `Allocations (bytes): ${target.label}`;
  let live: ReturnType<typeof setInterval> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let shown: Panel | undefined;
  const show = (r: JavaHeapResult, isLive: boolean) => {
    if (!shown) return;
    const total = r.allocated.reduce((a, s) => a + s.bytes, 0);
    const warnings = [`Widths are estimated bytes allocated (${r.samples} sampled allocations, one every ~${r.sampleBytes} bytes; ≈ ${(total / 1e6).toFixed(1)} MB in all).`];
    shown.result = toAllocProfile(r, target.label);
    shown.profile = fromProfileResult(byBytes(r, target.label), { name: title, groupByProcess: false });
    shown.post({ type: 'profile', profile: shown.profile, title, warnings, live: isLive });
  };
  const session = await startSession('java-heap', { pid: target.pid, intervalBytes: JAVA_HEAP_DEFAULT_INTERVAL_BYTES, top: 20, intervalS: 1 }, `Allocations of ${target.label}`, {
    onUpdate: () => undefined,
    onEnded: (_reason, result, message) => {
      if (live) clearInterval(live);
      if (timer) clearTimeout(timer);
      if (result) show(result, false);
      else shown?.post({ type: 'status', text: `The session ended without a result${message ? `: ${message}` : ''}`, error: true });
    },
  });
  shown = openPanel(context, title, () => void session.stop());
  let inFlight = false;
  live = setInterval(() => {
    if (inFlight) return;
    inFlight = true;
    session
      .snapshot()
      .then((r) => r && r.samples > 0 && live && show(r, true))
      .catch(() => undefined) // ending: the final graph follows
      .finally(() => (inFlight = false));
  }, 1000);
  if (durationS) timer = setTimeout(() => void session.stop(), durationS * 1000);
  shown.panel.panel.onDidDispose(() => void session.stop());
  return session.id;
}
