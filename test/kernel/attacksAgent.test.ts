// Attacks on the fleet agent as the install runs it: root, no --config, the token --make-token
// writes (0640 root:GROUP, GROUP being the scraper's). mallory, a user the test creates with
// nothing, connects from loopback: every endpoint (metrics, the machine's CPU profile, the
// allocation profile of alice's JVM) answers 401 and alice's JVM gets no Java agent; two request
// lines no URL parser accepts get 400 and the agent serves on; mallory cannot read the token.
// Root's own mistakes are caught too: a config owned by another user or writable by its group, a
// token file owned by another user are refused; a root-only file given as --config is not quoted
// in any of the errors. In the same run the legitimate scraper (a user in the token's group) reads
// the token and scrapes: curl with it gets metrics, and Debian's Prometheus, run as that user with
// authorization.credentials_file, scrapes the agent (up == 1).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { AttackBed, asUser, attackSkipReason, makeUser, removeUser, spawnAsUser, type AttackUser } from './attackKit';
import { jdk, noJdkReason } from './gcWorkload';
import { cliJs, runCli, sleep, startCli, waitFor } from '../helpers';

const skip = attackSkipReason(['curl']) ?? noJdkReason;
const tag = process.pid % 100000;
const prometheus = fs.existsSync('/usr/bin/prometheus') ? '/usr/bin/prometheus' : undefined;

let bed: AttackBed;
let mallory: AttackUser;
let alice: AttackUser;
let scraper: AttackUser;
let tokenFile = '';
let token = '';
const children: ChildProcess[] = [];

/** mallory's curl: the HTTP status code of a GET (extra curl arguments before the URL). */
function curlAs(u: AttackUser, url: string, extra: string[] = []): string {
  const r = asUser(u, ['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '20', ...extra, url], { timeoutMs: 30_000 });
  return r.stdout.trim();
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Every 4-character run of a secret that an output holds (none may). */
function leaked(secret: string, out: string, allowed: string): string[] {
  return [...secret.matchAll(/[A-Za-z0-9$]{4,}/g)].map((m) => m[0]).filter((w) => out.includes(w) && !allowed.includes(w));
}

describe('attacks on the fleet agent (closed by default)', { skip }, () => {
  let agent: ReturnType<typeof startCli>;
  let base = '';
  let jvm: ChildProcess;

  before(async () => {
    bed = new AttackBed('agent');
    mallory = makeUser(`ebpfM${tag}`);
    alice = makeUser(`ebpfA${tag}`);
    scraper = makeUser(`ebpfP${tag}`);
    // As the systemd unit's ExecStartPre makes it, with the scraper's group.
    tokenFile = path.join(bed.base, 'etc', 'agent.token');
    const made = runCli(['agent', '--make-token', '--token-file', tokenFile, '--group', scraper.name]);
    assert.equal(made.code, 0, made.stderr);
    token = fs.readFileSync(tokenFile, 'utf8').trim();
    bed.watch(tokenFile);

    // alice's JVM, started by alice: the allocation endpoint would load the Java agent into it.
    const src = path.join(bed.userDir(alice, 'alice-jvm'), 'Idle.java');
    fs.writeFileSync(src, 'public class Idle { public static void main(String[] a) throws Exception { System.out.println("ready"); Thread.sleep(300_000); } }\n');
    jvm = spawnAsUser(alice, [path.join(jdk!.home, 'bin', 'java'), '-Xshare:auto', '-XX:TieredStopAtLevel=1', src], {}, children);
    let out = '';
    jvm.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 30_000), "alice's JVM did not start");

    agent = startCli(['agent', '--listen', '127.0.0.1:0', '--token-file', tokenFile]);
    children.push(agent.child);
    assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(agent.stderr()), 60_000), `the agent did not start: ${agent.stderr()}`);
    base = /serving (http:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
    assert.match(agent.stderr(), /\(bearer token required\)/);
  });

  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    bed?.dispose();
    for (const u of [mallory, alice, scraper]) removeUser(u);
  });

  test('mallory on loopback: metrics, profile and alice JVM allocation profile all 401; no Java agent in alice JVM; the token holder scrapes', { timeout: 120_000 }, async () => {
    const before = bed.fingerprint();
    const allocs = `${base}/debug/pprof/allocs?seconds=1&pid=${jvm.pid}`;
    for (const [url, extra] of [
      [`${base}/metrics`, []],
      [`${base}/debug/pprof/profile?seconds=1`, []],
      [`${base}/debug/pprof/offcpu?seconds=1`, []],
      [allocs, []],
      [allocs, ['-H', 'Authorization: Bearer ']],
      [allocs, ['-H', `Authorization: Bearer ${'0'.repeat(64)}`]],
      [allocs, ['-u', 'root:']],
      [`${base}/debug/pprof/symbol`, []],
    ] as [string, string[]][]) {
      assert.equal(curlAs(mallory, url, extra), '401', `mallory got past auth: ${url} ${extra.join(' ')}`);
    }
    await sleep(1500);
    const maps = fs.readFileSync(`/proc/${jvm.pid}/maps`, 'utf8');
    assert.ok(!maps.includes('libebpf-studio-jvmagent'), "the Java agent was loaded into alice's JVM for mallory");
    assert.deepEqual(fs.readdirSync(`/proc/${jvm.pid}/root/tmp`).filter((f) => f.startsWith(`.ebpf-studio-jvm-${jvm.pid}-`)), [], "a Java agent file for alice's JVM");

    // The token is the scraper group's, not mallory's.
    const m = asUser(mallory, ['cat', tokenFile]);
    assert.notEqual(m.status, 0);
    assert.equal(m.stdout, '');
    const st = fs.statSync(tokenFile);
    assert.equal(st.mode & 0o777, 0o640);
    assert.equal(st.uid, 0);
    assert.equal(st.gid, scraper.gid);

    // Control: the scraper reads the token through its group and gets metrics with it.
    const s = asUser(scraper, ['cat', tokenFile]);
    assert.equal(s.status, 0, s.stderr);
    assert.equal(s.stdout.trim(), token);
    const ok = asUser(scraper, ['curl', '-s', '--max-time', '20', '-H', `Authorization: Bearer ${s.stdout.trim()}`, `${base}/metrics`]);
    assert.match(ok.stdout, /^ebpf_studio_tracer_up\{tracer="runqlat"\} [01]$/m, ok.stdout.slice(0, 500));
    // Even the token holder gets no Java agent into a JVM the config does not name (no config here).
    const refused = await fetch(allocs, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /only of JVMs the config names/);
    assert.ok(!fs.readFileSync(`/proc/${jvm.pid}/maps`, 'utf8').includes('libebpf-studio-jvmagent'), "the Java agent was loaded into alice's JVM without a config naming it");
    assert.deepEqual(bed.fingerprint(), before);
  });

  test('request lines no URL parser accepts: 400, and the agent is alive and serving after', { timeout: 60_000 }, async () => {
    for (const target of ['http://[::1', '//[', 'http://[::1]:99999999/metrics', '/%zz?pid=%zz']) {
      const code = curlAs(mallory, base, ['--request-target', target]);
      assert.ok(code === '400' || code === '401', `"GET ${target} HTTP/1.1" got ${code}`);
      if (target === 'http://[::1' || target === '//[') assert.equal(code, '400', target);
    }
    assert.equal(agent.child.exitCode, null, `the agent exited: ${agent.stderr()}`);
    const r = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
    assert.match(await r.text(), /ebpf_studio_tracer_up/);
  });

  test("root's mistakes: a config or token file another user owns or may write is refused, a root-only file is never quoted", { timeout: 60_000 }, () => {
    const cfgDir = bed.userDir(mallory, 'mallory-cfg');
    const owned = path.join(cfgDir, 'agent.json');
    fs.writeFileSync(owned, '{"profile": {"maxSeconds": 3600}}', { mode: 0o644 });
    fs.chownSync(owned, mallory.uid, mallory.gid);
    const o = runCli(['agent', '--config', owned, '--token-file', tokenFile]);
    assert.equal(o.code, 2, o.stderr);
    assert.match(o.stderr, new RegExp(`is owned by uid ${mallory.uid}, neither root nor the agent's user`));

    const groupWritable = path.join(bed.base, 'group-writable.json');
    fs.writeFileSync(groupWritable, '{}');
    fs.chmodSync(groupWritable, 0o664);
    const g = runCli(['agent', '--config', groupWritable, '--token-file', tokenFile]);
    assert.equal(g.code, 2, g.stderr);
    assert.match(g.stderr, /is writable by its group \(mode 0664\)/);

    const theirToken = path.join(cfgDir, 'token');
    fs.writeFileSync(theirToken, 'm'.repeat(64), { mode: 0o600 });
    fs.chownSync(theirToken, mallory.uid, mallory.gid);
    const t = runCli(['agent', '--listen', '127.0.0.1:0', '--token-file', theirToken]);
    assert.equal(t.code, 2, t.stderr);
    assert.match(t.stderr, new RegExp(`token file ${theirToken.replace(/[.]/g, '\\.')} is owned by uid ${mallory.uid}`));
    assert.ok(!`${t.stdout}${t.stderr}`.includes('mmmm'));

    // /etc/shadow's shape, and a JSON file of secrets: root-only, given to --config.
    const before = bed.fingerprint();
    const shadowText = 'root:$6$Kq2uTsAlT9x$Zh4vH8secretHashValue:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n';
    const shadow = bed.victim('shadow', shadowText, 0o640);
    const keyText = '{"apiKeyPrefixQ": "hunter2-Pass-W0rd"}\n';
    const keyed = bed.victim('secret-key.json', keyText, 0o600);
    const valueText = '{"runqueue": {"per": "s3cr3t-Value-Hunter2"}}\n';
    const valued = bed.victim('secret-value.json', valueText, 0o640);
    // The config's own key names may appear (they are in every error's list of keys), nothing else.
    const known = 'listen tls auth jvm runqueue profile forgetExitedAfterSeconds per';
    for (const [f, text] of [
      [shadow, shadowText],
      [keyed, keyText],
      [valued, valueText],
    ]) {
      const r = runCli(['agent', '--config', f, '--token-file', tokenFile]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /not valid JSON|not known \(not shown|runqueue\.per must be .* not \(not shown/);
      assert.deepEqual(leaked(text, r.stdout + r.stderr, f + known), [], `the error quotes ${f}: ${r.stderr}`);
      // mallory asking directly: not readable, and nothing of it either.
      const ma = asUser(mallory, [process.execPath, cliJs, 'agent', '--config', f]);
      assert.notEqual(ma.status, 0);
      assert.deepEqual(leaked(text, ma.stdout + ma.stderr, f + known), [], `mallory's error quotes ${f}: ${ma.stderr}`);
    }
    assert.deepEqual(bed.fingerprint().slice(0, before.length), before);
  });

  test('Prometheus, as the scraper user, scrapes with authorization.credentials_file (up == 1)', { timeout: 90_000 }, async (t) => {
    if (!prometheus) return t.skip("Debian's prometheus package is not installed (scripts/install-deps.sh --test)");
    const dir = bed.userDir(scraper, 'prometheus', 0o700);
    const promPort = await freePort();
    const cfg = path.join(dir, 'prometheus.yml');
    const target = new URL(base).host;
    fs.writeFileSync(cfg, `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: agent\n    authorization:\n      type: Bearer\n      credentials_file: ${tokenFile}\n    static_configs:\n      - targets: ['${target}']\n`);
    fs.chownSync(cfg, scraper.uid, scraper.gid);
    // Prometheus as a member of the token's group only (setpriv --clear-groups, then its own gid).
    const prom = spawn('setpriv', [`--reuid=${scraper.uid}`, `--regid=${scraper.gid}`, '--clear-groups', '--', prometheus, `--config.file=${cfg}`, `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${promPort}`], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(prom);
    let log = '';
    prom.stderr!.on('data', (d) => (log += d));
    const up = async () => {
      const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent('up{job="agent"}')}`).catch(() => undefined);
      if (!r?.ok) return undefined;
      const body = (await r.json()) as { data?: { result: { value: [number, string] }[] } };
      return body.data?.result[0]?.value[1];
    };
    let v: string | undefined;
    assert.ok(await waitFor(() => (void up().then((x) => (v = x)), v === '1'), 60_000, 1000), `Prometheus's up{job="agent"} is ${v}:\n${log.slice(-1500)}`);
    prom.kill('SIGTERM');
  });
});
