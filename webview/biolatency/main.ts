// The block I/O latency view: the kit's latency view with biolatency's nouns.
import { startLatencyView } from '../common/latencyView';

startLatencyView('biolatency');
