// Owns the running sessions of one helper (or one CLI run): starts them through the tracer
// registry, forwards their updates, and stops them all on shutdown so nothing outlives us.
// Everything a session sends (updates, snapshots, results) passes shown(): cut to what the
// requester may see of other users' processes and of the kernel (sys/symbolize/visibility.ts).
import type { EndReason, ResultOf, SessionStartResult, TracerName } from '../protocol/protocol';
import { asObject } from '../protocol/validate';
import { inputError } from '../protocol/errors';
import { tracerByName } from '../tracers';
import type { Session, TracerEnv } from '../tracers/tracer';
import { recordLosses } from '../tracers/lossHistory';
import { bootTicksNow, Visibility } from '../sys/symbolize/visibility';
import { requester } from '../sys/ownership';
import { targetContainer } from '../sys/proc/targetContainer';

export interface SessionListener {
  data(sessionId: string, tracer: TracerName, update: unknown): void;
  ended(sessionId: string, tracer: TracerName, reason: EndReason, result: unknown, message?: string): void;
}

interface Entry {
  id: string;
  tracer: TracerName;
  session: Session<TracerName>;
  view: View;
}

/** What the requester-visibility filter needs to know of a session's pids (sys/symbolize/visibility.ts). */
interface View {
  targets: readonly number[];
  /** when the session started (bootTicksNow) */
  startTicks: number;
  /** its targets' owners as judged while they ran */
  seen: Map<number, { start: number; owned: boolean }>;
}

export class SessionManager {
  private readonly sessions = new Map<string, Entry>();
  private next = 1;

  constructor(
    private readonly env: TracerEnv,
    private readonly listener: SessionListener,
  ) {}

  async start(params: unknown): Promise<SessionStartResult> {
    const p = asObject(params);
    const tracer = tracerByName(p.tracer);
    if (!tracer) throw inputError(`unknown tracer ${JSON.stringify(p.tracer)}`);
    const options = tracer.validate(p.options ?? {});
    const id = `s${this.next++}`;
    const name = tracer.name as TracerName;
    let started = false;
    const pending: (() => void)[] = [];
    const view: View = { targets: [], startTicks: bootTicksNow(), seen: new Map() };
    const session: Session<TracerName> = await tracer.start(options, this.env, {
      update: (u: unknown) => {
        const send = () => this.listener.data(id, name, this.shown(u, view));
        if (started) send();
        else pending.push(send);
      },
      ended: (reason: 'target-exited' | 'error', message?: string) => {
        const finish = () => {
          const entry = this.sessions.get(id);
          if (!entry) return;
          this.sessions.delete(id);
          void entry.session.stop().then(
            (result) => {
              recordLosses(result);
              this.listener.ended(id, name, reason, this.shown(result, view), message);
            },
            () => this.listener.ended(id, name, reason, this.shown(entry.session.snapshot(), view), message),
          );
        };
        if (started) finish();
        else pending.push(finish);
      },
    });
    this.sessions.set(id, { id, tracer: name, session, view });
    view.targets = session.targets;
    // Who the targets belong to, judged now while they run (a result may come after they exit).
    const vis = this.visibility(view);
    for (const pid of view.targets) vis?.ownsProcess(pid);
    started = true;
    // Updates that arrived while attaching go out after the start reply's data is known.
    setImmediate(() => pending.splice(0).forEach((f) => f()));
    // read now: the target may have exited (and its container with it) by the end
    const container = targetContainer(options, session.targets);
    return this.shown({ sessionId: id, tracer: name, targets: session.targets, ...(container !== undefined ? { container } : {}), warnings: session.warnings, startedAtMs: Date.now() }, view);
  }

  private get(params: unknown): Entry {
    const p = asObject(params);
    const e = typeof p.sessionId === 'string' ? this.sessions.get(p.sessionId) : undefined;
    if (!e) throw inputError(`no running session ${JSON.stringify(p.sessionId)} (it may have ended already)`);
    return e;
  }

  snapshot(params: unknown): { sessionId: string; tracer: TracerName; result: ResultOf<TracerName> } {
    const e = this.get(params);
    return { sessionId: e.id, tracer: e.tracer, result: this.shown(e.session.snapshot(), e.view) };
  }

  async stop(params: unknown): Promise<{ sessionId: string; tracer: TracerName; result: ResultOf<TracerName> }> {
    const e = this.get(params);
    this.sessions.delete(e.id);
    const result = await e.session.stop();
    recordLosses(result);
    const shown = this.shown(result, e.view);
    this.listener.ended(e.id, e.tracer, 'stopped', shown);
    return { sessionId: e.id, tracer: e.tracer, result: shown };
  }

  get size(): number {
    return this.sessions.size;
  }

  async stopAll(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((e) => e.session.stop()));
  }

  /** `doc` as the requester may see it; frames outside any object with a pid belong to the one target. */
  private shown<T>(doc: T, view: View): T {
    const vis = this.visibility(view);
    return vis ? vis.shape(doc, view.targets.length === 1 ? view.targets[0] : undefined) : doc;
  }

  /** The filter for a non-root requester; undefined for root, who sees everything. */
  private visibility(view: View): Visibility | undefined {
    const who = this.env.requester ?? requester();
    if (who.uid === 0) return undefined;
    return new Visibility({ uid: who.uid, gid: who.gid }, undefined, { startTicks: view.startTicks, pinned: view.targets, seen: view.seen });
  }
}
