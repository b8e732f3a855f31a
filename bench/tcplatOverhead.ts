// `tcplat overhead per connect`: the BPF run time each loopback connection costs under our tcplat
// (connect latency, and with --rtt the round-trip times) and under a peer on the same tracepoints.
// Debian's libbpf-tools tcpconnlat and tcprtt attach kprobes/fentry (tcp_v4_connect,
// tcp_rcv_established): where the kernel has those they are the peers; where it has neither
// (this kernel) the peer is bpftrace timing SYN_SENT -> ESTABLISHED on sock:inet_sock_set_state
// and reading srtt on tcp:tcp_probe, what the tcplat kernel test compares histograms against.
// The workload (bench/workloads/tcpconnect.c) connects to its own server on 127.0.0.1 and reads
// a fixed amount from each connection. Rounds alternate, each tracer attached for its rounds only;
// kernel.bpf_stats_enabled counts the run time of every program the tracer's process holds (each
// state change of both ends, each received segment), divided by the workload's connects.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { bpfNsPerEvent, median, round, startBpftrace, startCli, startUntil, type Attached, type BenchContext, type Row } from './lib';

const BYTES = 64 * 1024;

/** libbpf-tools' tool when it attaches here, else bpftrace on our tracepoints; and its name. */
interface Peer {
  name: string;
  start(): Promise<Attached>;
}

const CONNECT_BT = [
  'tracepoint:sock:inet_sock_set_state /args->protocol == 6 && args->newstate == 2/ { @start[args->skaddr] = nsecs; }',
  'tracepoint:sock:inet_sock_set_state /args->oldstate == 2/ { $s = @start[args->skaddr]; if ($s) { if (args->newstate == 1) { @us = hist((nsecs - $s) / 1000); } delete(@start[args->skaddr]); } }',
  'END { clear(@start); }',
].join('\n');
const RTT_BT = 'tracepoint:tcp:tcp_probe { @us = hist(args->srtt); }';

/** Whether a libbpf-tools tool attaches on this kernel: it exits at once (status 1) when it cannot. */
function attaches(tool: string): boolean {
  return spawnSync('timeout', ['-s', 'INT', '1', tool], { stdio: 'ignore' }).status === 124;
}

function connectPeer(): Peer {
  return attaches('/usr/sbin/tcpconnlat')
    ? { name: 'libbpf-tools tcpconnlat', start: () => startUntil('stdbuf', ['-oL', '/usr/sbin/tcpconnlat'], 'stdout', /PID/) }
    : { name: 'bpftrace (tcpconnlat on tracepoints)', start: () => startBpftrace(CONNECT_BT) };
}

function rttPeer(): Peer {
  return attaches('/usr/sbin/tcprtt')
    ? { name: 'libbpf-tools tcprtt', start: () => startUntil('stdbuf', ['-oL', '/usr/sbin/tcprtt'], 'stdout', /Tracing/) }
    : { name: 'bpftrace (tcprtt on tracepoints)', start: () => startBpftrace(RTT_BT) };
}

export async function benchTcplat(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 2 : 7;
  const connects = ctx.quick ? 2000 : 5000;
  const bin = path.join(ctx.buildDir, 'tcpconnect');
  const work = () => {
    const r = spawnSync(bin, [String(connects), String(BYTES)], { stdio: 'ignore' });
    if (r.status !== 0) throw new Error(`the connect workload failed (${r.status ?? r.signal})`);
  };
  // the quick run (CI) times connect latency only
  const peer = { connect: connectPeer(), rtt: ctx.quick ? undefined : rttPeer() };
  ctx.log(`  tcplat: peers ${peer.connect.name}${peer.rtt ? `, ${peer.rtt.name}` : ''}`);
  const m = { ours: [] as number[], peer: [] as number[], oursRtt: [] as number[], peerRtt: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    m.ours.push(await bpfNsPerEvent(() => startCli(['tcplat']), work, connects));
    m.peer.push(await bpfNsPerEvent(peer.connect.start, work, connects));
    if (!peer.rtt) continue;
    m.oursRtt.push(await bpfNsPerEvent(() => startCli(['tcplat', '--rtt']), work, connects));
    m.peerRtt.push(await bpfNsPerEvent(peer.rtt.start, work, connects));
  }
  const list = (xs: number[]) => xs.map((x) => Math.round(x)).join(' ');
  ctx.log(`  tcplat: BPF ns per connect ours ${list(m.ours)}, ${peer.connect.name} ${list(m.peer)}${peer.rtt ? `; --rtt ours ${list(m.oursRtt)}, ${peer.rtt.name} ${list(m.peerRtt)}` : ''}`);
  const how = `${connects} loopback connects to the workload's own server, ${BYTES / 1024} KiB read from each, per round; median of ${rounds} alternating rounds; kernel.bpf_stats_enabled run time of every program each tool holds (every TCP state change and received segment on the machine), over the workload's connects`;
  const rows: Row[] = [
    {
      name: 'tcplat overhead per connect (BPF run time per loopback connection)',
      value: round(median(m.ours), 0),
      unit: 'ns',
      target: null,
      better: 'lower',
      peer: { name: peer.connect.name, value: round(median(m.peer), 0) },
      detail: `connect latency (ours: tcplat). ${how}`,
    },
  ];
  if (peer.rtt) {
    rows.push({
      name: 'tcplat --rtt overhead per connect (BPF run time per loopback connection)',
      value: round(median(m.oursRtt), 0),
      unit: 'ns',
      target: null,
      better: 'lower',
      peer: { name: peer.rtt.name, value: round(median(m.peerRtt), 0) },
      detail: `round-trip times (ours: tcplat --rtt). ${how}`,
    });
  }
  return rows;
}
