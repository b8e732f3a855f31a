// The CPU-time-per-run view: the kit's latency view with cpudist's nouns.
import { startLatencyView } from '../common/latencyView';

startLatencyView('cpudist');
