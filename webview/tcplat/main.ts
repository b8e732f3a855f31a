// The TCP latency view: the kit's latency view with tcplat's nouns.
import { startLatencyView } from '../common/latencyView';

startLatencyView('tcplat');
