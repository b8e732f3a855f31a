// A log2-histogram tracer (biolatency, cpudist, tcplat: config "histograms") as one Prometheus
// histogram family, as ebpf_exporter exports its bio latency: the kernel's buckets of each
// interval added to cumulative series, one per key when the tracer keeps them per key. Everything
// comes from the catalog (nouns, key labels, flags) and the kit, so a new kit tracer is exported
// without a line here.
import { CATALOG, histogramOf, keyText } from '../protocol/catalog';
import type { HistUpdate, KeyHistogram } from '../protocol/histogram';
import { kitTracers } from '../tracers/index';
import type { Session, TracerEnv } from '../tracers/tracer';
import type { KitExportConfig, KitExportName } from './config';
import { addLog2, Histograms, RUNQ_BUCKETS_S, type Labels } from './exposition';

/** The series of one key are about a process: named by pid (or tid) and comm; other keys by their name. */
const PROCESS_KEYS = ['process', 'thread'];

export class KitExport {
  readonly hist = new Histograms(RUNQ_BUCKETS_S);
  /** ebpf_studio_<tracer>[_<flag>...]_seconds: a flag changes what is measured (tcplat_rtt), so it names another family */
  readonly metric: string;
  session?: Session<KitExportName>;
  /** when each key's series last counted something (Date.now()), "other" included */
  private readonly seen = new Map<string, number>();

  constructor(
    readonly name: KitExportName,
    private readonly cfg: KitExportConfig,
  ) {
    const on = (histogramOf(name).flags ?? []).filter((f) => cfg.options[f] === true);
    this.metric = ['ebpf_studio', name, ...on, 'seconds'].join('_');
  }

  get help(): string {
    const n = histogramOf(this.name);
    const per = this.cfg.options.per === 'none' ? '' : ` per ${n.keyNouns[this.cfg.options.per]}`;
    return `${CATALOG[this.name].title}${per}: ${n.measure}; counts ${n.events} (${n.meaning}); kernel log2 buckets, _sum estimated at bucket middles; past maxSeries keys count under "other".`;
  }

  /** Starts the session (the caller keeps its health and retries); updates land in the series. */
  async start(env: TracerEnv, events: { update(u: HistUpdate): void; ended(message: string): void }): Promise<void> {
    const tracer = kitTracers[this.name];
    this.session = (await tracer.start(tracer.validate(this.cfg.options) as never, env, {
      update: (u) => {
        this.add(u as HistUpdate);
        events.update(u as HistUpdate);
      },
      ended: (_reason, message) => events.ended(message ?? 'the session ended'),
    })) as Session<KitExportName>;
  }

  private add(u: HistUpdate): void {
    if (this.cfg.options.per === 'none') addLog2(this.hist, {}, u.interval.buckets);
    else for (const k of u.keys) addLog2(this.hist, this.labels(k), k.buckets);
  }

  /** A key's labels, bounded: past maxSeries keys (and while they stay), the key is "other". */
  private labels(k: KeyHistogram): Labels {
    const per = this.cfg.options.per;
    const label = histogramOf(this.name).keyLabels[per] || per;
    const isProcess = PROCESS_KEYS.includes(per);
    const text = keyText(this.name, per, k.key);
    const id = isProcess ? `${text}\u0000${k.comm}` : k.comm || text;
    const now = Date.now();
    if (!this.seen.has(id) && this.seen.size >= this.cfg.maxSeries) {
      this.seen.set('other', now);
      return { [label]: 'other' };
    }
    this.seen.set(id, now);
    return isProcess ? { [label]: text, comm: k.comm } : { [label]: id };
  }

  /** Drops the series of keys that counted nothing for `ms` (a process gone, a disk removed). */
  forgetIdle(now: number, ms: number): void {
    const label = histogramOf(this.name).keyLabels[this.cfg.options.per] || this.cfg.options.per;
    for (const [id, seen] of this.seen) {
      if (now - seen < ms) continue;
      this.seen.delete(id);
      const [value, comm] = id.split('\u0000');
      this.hist.forget((l) => l[label] === value && (comm === undefined || l.comm === comm));
    }
  }
}
