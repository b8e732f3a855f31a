// The helper's JSON-RPC server, in-process over a stream pair: bad params and unknown methods
// get error responses, never a crash, and the connection keeps answering.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { createMessageConnection, ResponseError, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { createHelperServer, helperRole } from '../../extension/helper/main';
import * as proto from '../../extension/protocol/protocol';
import { rpcErrorCodes } from '../../extension/protocol/errors';

function pair() {
  const toHelper = new PassThrough();
  const fromHelper = new PassThrough();
  let exitCode: number | undefined;
  const server = createHelperServer({ input: toHelper, output: fromHelper, exit: (c) => (exitCode = c) }, helperRole);
  const client = createMessageConnection(new StreamMessageReader(fromHelper), new StreamMessageWriter(toHelper));
  client.listen();
  return { client, server, toHelper, exitCode: () => exitCode };
}

async function rejects(p: Promise<unknown>, code: number, message: RegExp) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ResponseError, `expected a ResponseError, got ${e}`);
    assert.equal(e.code, code);
    assert.match(e.message, message);
    return true;
  });
}

test('invalid session params are answered with input errors naming the field', async () => {
  const { client, toHelper } = pair();
  try {
    await rejects(client.sendRequest(proto.sessionStart, 'nonsense' as never), rpcErrorCodes.input, /params must be an object/);
    await rejects(client.sendRequest(proto.sessionStart, { tracer: 'no-such', options: {} } as never), rpcErrorCodes.input, /unknown tracer/);
    await rejects(client.sendRequest(proto.sessionStart, { tracer: 'selftest', options: { parentPid: -1 } } as never), rpcErrorCodes.input, /parentPid must be between 0/);
    await rejects(client.sendRequest(proto.sessionStart, { tracer: 'selftest', options: { parentPid: 'x' } } as never), rpcErrorCodes.input, /parentPid must be an integer/);
    await rejects(client.sendRequest(proto.sessionStart, { tracer: 'selftest', options: { attach: 'kprobe' } } as never), rpcErrorCodes.input, /attach must be one of/);
    await rejects(client.sendRequest(proto.sessionStop, { sessionId: 's999' }), rpcErrorCodes.input, /no running session/);
    await rejects(client.sendRequest(proto.sessionSnapshot, { sessionId: 42 } as never), rpcErrorCodes.input, /no running session/);
    await rejects(client.sendRequest(proto.listProcesses, { jvmOnly: 'yes' } as never), rpcErrorCodes.input, /jvmOnly must be true or false/);
  } finally {
    client.dispose();
    toHelper.end();
  }
});

test('an unknown method gets MethodNotFound and the helper keeps answering', async () => {
  const { client, toHelper } = pair();
  try {
    await rejects(client.sendRequest('no/such/method', {}), -32601, /./);
    const procs = await client.sendRequest(proto.listProcesses, {});
    assert.ok(procs.some((p) => p.pid === process.pid), 'listProcesses still answers and includes this process');
  } finally {
    client.dispose();
    toHelper.end();
  }
});

test('listContainers: the running containers a container scope offers, each with its full id and label (none outside containers)', async () => {
  const { client, toHelper } = pair();
  try {
    const list = await client.sendRequest(proto.listContainers).catch((e: Error) => e);
    if (list instanceof Error) return assert.match(list.message, /no cgroup v2 file system is mounted here/);
    for (const l of list) {
      assert.match(l.container.id, /^[0-9a-f]{64}$/);
      assert.ok(l.label.startsWith(l.container.runtime) && l.processes >= 1, JSON.stringify(l));
    }
  } finally {
    client.dispose();
    toHelper.end();
  }
});

test('closing the input shuts the helper down', async () => {
  const { client, toHelper, exitCode } = pair();
  client.dispose();
  toHelper.end();
  for (let i = 0; i < 50 && exitCode() === undefined; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(exitCode(), 0);
});
