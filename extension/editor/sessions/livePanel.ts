// What every live view's feature (Java GC, run queue, JVM timeline) does between starting its
// session and showing it: the session starts before the panel exists (so a refused target shows
// an error, not an empty view) and what it sends until then waits in a queue; while it runs, its
// document is checkpointed (every CHECKPOINT_MS and when the window closes or reloads) under the
// panel's session key, so a reload brings the panel back stopped with the figures it had; and it
// ends once, by Stop (at the click) or by the session itself (target exited, error).
import type { AnySessionFile } from '../../model/sessionFile';
import type { TypedPanel } from '../ui/webviewPanel';
import { checkpointWhileRunning, newSessionKey, windowClosing } from './sessionStore';

/** What a panel brought back by a reload says about its session. */
export const RELOADED = 'the window reloaded or closed while tracing, which ended the session; these are its figures up to then';

export class LiveViewHost<ToView, FromView> {
  /** the key the panel and its stored document share (the panel serializer finds it by this) */
  readonly key = newSessionKey();
  readonly startedAt = new Date();
  private view: TypedPanel<ToView, FromView> | undefined;
  private readonly early: ToView[] = [];
  private checkpoint: { done(): void } | undefined;
  private ended = false;

  /** Posts to the panel, or queues until the panel is attached. */
  send(m: ToView): void {
    if (this.view) this.view.post(m);
    else this.early.push(m);
  }

  /** The panel is open: what was queued goes to it, in order. */
  attach(view: TypedPanel<ToView, FromView>): TypedPanel<ToView, FromView> {
    this.view = view;
    for (const m of this.early.splice(0)) view.post(m);
    return view;
  }

  /** Writes `snapshot()` (the session as it stands, saying it was cut short) while the session runs. */
  checkpointWith(snapshot: () => AnySessionFile | string): void {
    if (this.ended) return;
    this.checkpoint = checkpointWhileRunning(this.key, snapshot);
  }

  get finished(): boolean {
    return this.ended;
  }

  /**
   * Whether an update still counts: not after the session ended (Stop), nor once the window is
   * closing or reloading (the checkpoint written then is what the reloaded panel shows, so what
   * the helper sends while it winds down would make the stored figures differ from it).
   */
  get accepting(): boolean {
    return !this.ended && !windowClosing();
  }

  /**
   * Why the session ended, as its stored document says: once the window is closing, the reload (or
   * close) ended it, whatever the helper reports after ("the helper is gone" as it goes away).
   */
  endedAs<R extends string>(reason: R, message?: string): { reason: R | 'stopped'; message?: string } {
    return windowClosing() ? { reason: 'stopped', message: RELOADED } : { reason, message };
  }

  /** Runs `onEnd` the first time only (Stop and the session's own end may both come); stops checkpointing. */
  finish(onEnd: () => void): void {
    if (this.ended) return;
    this.ended = true;
    this.checkpoint?.done();
    onEnd();
  }
}
