// The view of every log2-histogram tracer (runqlat, biolatency, cpudist, tcplat, ...): the kit's
// latency view, which takes the tracer's nouns from the catalog when the extension says which
// tracer it shows. One bundle and one view type, so a new kit tracer adds no view of its own.
import { startLatencyView } from '../common/latencyView';

startLatencyView();
