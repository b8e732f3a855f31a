// The run-queue latency view: the kit's latency view with runqlat's nouns.
import { startLatencyView } from '../common/latencyView';

startLatencyView('runqlat');
