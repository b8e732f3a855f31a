// libbpf-tools' text histograms (biolatency, runqlat, cpudist print them alike), for tests that
// compare ours with them.

/** [low, high, count] per line, per block: "disk = X" names one (-D), "all" before any. */
export function parseBccHistograms(text: string): Map<string, [number, number, number][]> {
  const out = new Map<string, [number, number, number][]>();
  let disk = 'all';
  for (const line of text.split('\n')) {
    const d = /^disk = (\S+)/.exec(line.trim());
    if (d) disk = d[1];
    const m = /^\s*(\d+) -> (\d+)\s*: (\d+)/.exec(line);
    if (m) (out.get(disk) ?? out.set(disk, []).get(disk)!).push([Number(m[1]), Number(m[2]), Number(m[3])]);
  }
  return out;
}
