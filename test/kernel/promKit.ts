// Debian's Prometheus scraping an agent, for the kernel tests that check what it stores: a free
// port, a scrape config with the agent's token, the server, and PromQL through its HTTP API.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const prometheus = ['/usr/bin/prometheus'].find((p) => fs.existsSync(p));
export const promtool = ['/usr/bin/promtool'].find((p) => fs.existsSync(p));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

/** An instant query's whole result vector. */
export async function promVector(base: string, q: string): Promise<PromSample[]> {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as { status: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  assert.equal(body.status, 'success', `query ${q} failed: ${JSON.stringify(body)}`);
  return body.data!.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

/** An instant query's first value, or undefined when the vector is empty. */
export async function promQuery(base: string, q: string): Promise<number | undefined> {
  return (await promVector(base, q))[0]?.value;
}

/**
 * Prometheus scraping `target` (host:port) every 2 s with the bearer token in `tokenFile`, its
 * data in `dir`; over https when `tls` is given (the CA to check the agent's certificate with,
 * and the name it must carry); `target` labels as service discovery would add them, and relabel
 * rules for them (honor_labels: a series' own labels win). The caller kills `child` (SIGTERM) when done.
 */
export async function startPrometheus(
  dir: string,
  target: string,
  tokenFile: string,
  tls?: { caFile: string; serverName: string },
  targetLabels?: Record<string, string>,
  relabel?: Record<string, unknown>[],
): Promise<{ base: string; child: ChildProcess; log(): string; startedAt: number }> {
  assert.ok(prometheus, "Debian's prometheus package is not installed");
  const port = await freePort();
  const cfg = path.join(dir, 'prometheus.yml');
  const https = tls ? `    scheme: https\n    tls_config:\n      ca_file: ${tls.caFile}\n      server_name: ${tls.serverName}\n` : '';
  const labels = targetLabels ? `        labels: ${JSON.stringify(targetLabels)}\n` : '';
  const honor = `${targetLabels ? '    honor_labels: true\n' : ''}${relabel ? `    relabel_configs: ${JSON.stringify(relabel)}\n` : ''}`;
  fs.writeFileSync(
    cfg,
    `global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\nscrape_configs:\n  - job_name: ebpf-studio\n${https}${honor}    authorization:\n      type: Bearer\n      credentials_file: ${tokenFile}\n    static_configs:\n      - targets: ['${target}']\n${labels}`,
  );
  const child = spawn(prometheus, [`--config.file=${cfg}`, `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d) => (log += d));
  return { base: `http://127.0.0.1:${port}`, child, log: () => log, startedAt: Date.now() };
}
