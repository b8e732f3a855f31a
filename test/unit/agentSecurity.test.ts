// The fleet agent's defences without BPF: request lines no URL parser accepts and hostile
// Authorization headers get 4xx and the server serves on; per-client, total and memory limits
// answer 429/503; the files it trusts are checked for owner and mode and never quoted when they
// are not world-readable; --make-token writes 0640 and keeps an existing token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { authorized, listen, readToken, type Endpoints, type Limits } from '../../extension/agent/server';
import { makeToken, readTrusted, untrustedFileReason } from '../../extension/agent/files';
import { readConfig } from '../../extension/agent/config';
import { StudioError } from '../../extension/protocol/errors';

const TOKEN = 'f'.repeat(64);

/** Sends raw bytes and returns the status code of the answer (0: none before the socket closed). */
function raw(url: string, bytes: string): Promise<number> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = net.connect(Number(u.port), u.hostname);
    let got = '';
    s.on('data', (d) => (got += d));
    s.on('error', () => undefined);
    s.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
    s.setTimeout(5000, () => s.destroy());
    s.write(bytes, () => s.end());
  });
}

function endpoints(over: Partial<Endpoints> = {}): Endpoints {
  return { metrics: () => 'm 1\n', profile: async () => Buffer.from('cpu'), maxProfileSeconds: 60, profileEnabled: true, ...over };
}

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-agentsec-'));
  fs.chmodSync(d, 0o755);
  return d;
}

test('bad request targets get 400 and the agent serves on; hostile Authorization headers get 401', async () => {
  const server = await listen({ host: '127.0.0.1', port: 0 }, { auth: { bearer: Buffer.from(TOKEN) } }, endpoints(), () => undefined);
  try {
    for (const line of ['GET http://[::1 HTTP/1.1', 'GET //[ HTTP/1.1', 'GET http://%zz/ HTTP/1.1', 'GET http://a:b@[x]:99999/ HTTP/1.1']) {
      assert.equal(await raw(server.url, `${line}\r\nHost: x\r\n\r\n`), 400, line);
    }
    // Node's own parser refuses these; the answer is still a 400 (or 431), and the server lives.
    assert.equal(await raw(server.url, 'GET /metrics HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'), 400);
    assert.equal(await raw(server.url, `GET /metrics HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`), 431);
    for (const h of ['Bearer', 'Bearer ', `Bearer ${TOKEN.slice(1)}`, `Bearer ${TOKEN}x`, `bearer  ${'x'.repeat(8000)}`, 'Basic !!!', 'Basic', 'Digest x', `Basic ${Buffer.from(`:${TOKEN}`).toString('base64')}`]) {
      const r = await fetch(`${server.url}/metrics`, { headers: { Authorization: h } });
      assert.equal(r.status, 401, h.slice(0, 30));
      await r.text();
    }
    const ok = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'm 1\n');
  } finally {
    await server.close();
  }
});

test('authorized(): bearer and basic compared whole, unknown users refused', () => {
  const basic = new Map([['prom', Buffer.from('s3cret-s3cret')]]);
  const b64 = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  assert.ok(authorized({ bearer: Buffer.from(TOKEN) }, `Bearer ${TOKEN}`));
  assert.ok(authorized({ bearer: Buffer.from(TOKEN) }, `  bearer   ${TOKEN}  `));
  assert.ok(!authorized({ bearer: Buffer.from(TOKEN) }, `Bearer ${TOKEN.slice(0, 63)}`));
  assert.ok(!authorized({ bearer: Buffer.from(TOKEN) }, undefined));
  assert.ok(authorized({ basic }, b64('prom:s3cret-s3cret')));
  assert.ok(!authorized({ basic }, b64('prom:s3cret')));
  assert.ok(!authorized({ basic }, b64('other:s3cret-s3cret')));
  assert.ok(!authorized({ basic }, b64(':s3cret-s3cret')));
  assert.ok(!authorized({ basic }, `Bearer s3cret-s3cret`));
});

test('limits: a client past its requests at once gets 429, past the total 503, a response past the memory bound 503', async () => {
  let release = () => undefined as void;
  const held = new Promise<void>((r) => (release = r));
  const limits: Limits = { perClient: 2, inflight: 3, responseBytes: 1 << 20 };
  const server = await listen({ host: '127.0.0.1', port: 0 }, {}, endpoints({ profile: async () => (await held, Buffer.from('cpu')), metrics: () => 'x'.repeat(2 << 20) }), () => undefined, limits);
  try {
    const slow = [fetch(`${server.url}/debug/pprof/profile?seconds=1`), fetch(`${server.url}/debug/pprof/profile?seconds=1`)];
    await new Promise((r) => setTimeout(r, 200));
    const third = await fetch(`${server.url}/debug/pprof/profile?seconds=1`);
    assert.equal(third.status, 429);
    assert.match(await third.text(), /too many requests at once from .*at most 2/);
    const big = await fetch(`${server.url}/metrics`);
    assert.equal(big.status, 429, 'the same client is still at its limit');
    await big.text();
    release();
    for (const r of await Promise.all(slow)) {
      assert.equal(r.status, 200);
      assert.equal(await r.text(), 'cpu');
    }
    const over = await fetch(`${server.url}/metrics`);
    assert.equal(over.status, 503);
    assert.match(await over.text(), /this response \(2097152 bytes\) and those being sent \(0 bytes\) exceed the 1048576 bytes/);
    const after = await fetch(`${server.url}/debug/pprof/profile?seconds=1`);
    assert.equal(after.status, 200, 'slots are given back');
    await after.text();
  } finally {
    await server.close();
  }
});

test('trusted files: owner and mode refused with the fix, never quoted unless world-readable', () => {
  assert.match(untrustedFileReason({ uid: 1234, mode: 0o100600 }, false, 0)!, /owned by uid 1234, neither root nor the agent's user/);
  assert.equal(untrustedFileReason({ uid: 1234, mode: 0o100600 }, false, 1234), undefined);
  assert.match(untrustedFileReason({ uid: 0, mode: 0o100664 }, false, 0)!, /writable by its group \(mode 0664\)/);
  assert.match(untrustedFileReason({ uid: 0, mode: 0o100646 }, false, 0)!, /writable by every user/);
  assert.match(untrustedFileReason({ uid: 0, mode: 0o100644 }, true, 0)!, /secret readable by every user/);
  assert.equal(untrustedFileReason({ uid: 0, mode: 0o100640 }, true, 0), undefined);
  assert.equal(untrustedFileReason({ uid: 0, mode: 0o100644 }, false, 0), undefined);

  const d = tmp();
  try {
    const secret = 'root:$6$Zq9sAlTsEcReT:19000:0:99999:7:::\nsecretkey-value-XYZ\n';
    const shadow = path.join(d, 'shadow');
    fs.writeFileSync(shadow, secret, { mode: 0o600 });
    const leaks = (msg: string) => [...secret.matchAll(/[A-Za-z0-9$]{4,}/g)].filter((m) => msg.includes(m[0]) && !shadow.includes(m[0]));
    assert.throws(() => readConfig(shadow), (e: StudioError) => e.kind === 'input' && /not valid JSON/.test(e.message) && leaks(e.message).length === 0);
    const keyed = path.join(d, 'keyed.json');
    fs.writeFileSync(keyed, '{"secretkey-value-XYZ": 1}', { mode: 0o600 });
    assert.throws(() => readConfig(keyed), (e: StudioError) => /has a key that is not known \(not shown/.test(e.message) && !e.message.includes('XYZ'));
    const valued = path.join(d, 'valued.json');
    fs.writeFileSync(valued, '{"runqueue": {"per": "secretkey-value-XYZ"}}', { mode: 0o640 });
    assert.throws(() => readConfig(valued), (e: StudioError) => /runqueue\.per must be/.test(e.message) && !e.message.includes('XYZ'));
    fs.chmodSync(valued, 0o644);
    assert.throws(() => readConfig(valued), /not "secretkey-value-XYZ"/);
    fs.chmodSync(valued, 0o664);
    assert.throws(() => readConfig(valued), /writable by its group \(mode 0664\): run chmod go-w/);
    assert.throws(() => readConfig(d), /is a folder/);
    assert.throws(() => readConfig('/dev/null'), /is not a regular file/);

    const tok = path.join(d, 'tok');
    fs.writeFileSync(tok, TOKEN, { mode: 0o644 });
    assert.throws(() => readToken(tok, 'auth.bearerTokenFile'), /secret readable by every user \(mode 0644\)/);
    fs.chmodSync(tok, 0o640);
    assert.equal(readToken(tok, 'auth.bearerTokenFile').toString(), TOKEN);
    fs.writeFileSync(tok, 'short');
    assert.throws(() => readToken(tok, 'auth.bearerTokenFile'), (e: StudioError) => /shorter than 16/.test(e.message) && !e.message.includes('short '));
    if (process.geteuid?.() === 0) {
      fs.writeFileSync(tok, TOKEN);
      fs.chownSync(tok, 65534, 65534);
      assert.throws(() => readToken(tok, 'auth.bearerTokenFile'), /owned by uid 65534, neither root nor the agent's user/);
    }
  } finally {
    fs.rmSync(d, { recursive: true, force: true });
  }
});

test('--make-token: 0640 with the group asked for, an existing token kept, a world-readable one refused', () => {
  const d = tmp();
  try {
    const gid = process.getegid?.() ?? 0;
    const tok = path.join(d, 'etc', 'agent.token');
    assert.equal(makeToken(tok, gid), true);
    const st = fs.statSync(tok);
    assert.equal(st.mode & 0o777, 0o640);
    assert.equal(st.gid, gid);
    assert.equal(fs.statSync(path.dirname(tok)).mode & 0o777, 0o755);
    const first = fs.readFileSync(tok, 'utf8');
    assert.match(first, /^[0-9a-f]{64}\n$/);
    assert.equal(readTrusted(tok, 'token', true).text.toString(), first);
    assert.equal(makeToken(tok, gid), false);
    assert.equal(fs.readFileSync(tok, 'utf8'), first, 'an existing token is kept');
    fs.chmodSync(tok, 0o644);
    assert.throws(() => makeToken(tok, gid), /readable by every user/);
  } finally {
    fs.rmSync(d, { recursive: true, force: true });
  }
});
