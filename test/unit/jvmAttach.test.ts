// The HotSpot attach protocol: request framing, reply parsing, namespace pids, and one full
// exchange against a unix socket that answers the way HotSpot's attach listener does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { attachCommand, encodeAttachRequest, namespacePid, parseAttachReply } from '../../extension/sys/jvm/attach';

test('a jcmd request is version, command and exactly three NUL-terminated arguments', () => {
  assert.equal(encodeAttachRequest('jcmd', ['Compiler.perfmap']).toString('latin1'), '1\0jcmd\0Compiler.perfmap\0\0\0');
  assert.equal(encodeAttachRequest('printflag', ['PreserveFramePointer']).toString('latin1'), '1\0printflag\0PreserveFramePointer\0\0\0');
  assert.equal(encodeAttachRequest('load', ['/a/lib.so', 'true', 'opts']).toString('latin1'), '1\0load\0/a/lib.so\0true\0opts\0');
  assert.equal(encodeAttachRequest('threaddump').toString('latin1'), '1\0threaddump\0\0\0\0');
});

test('bad requests are refused before anything is sent', () => {
  assert.throws(() => encodeAttachRequest('jcmd', ['a', 'b', 'c', 'd']), /at most 3 arguments/);
  assert.throws(() => encodeAttachRequest('jcmd', ['a\0b']), /NUL byte/);
  assert.throws(() => encodeAttachRequest(''), /command is empty/);
});

test('replies: status line, then output', () => {
  assert.deepEqual(parseAttachReply('0\nhello\nworld\n'), { status: 0, output: 'hello\nworld\n' });
  assert.deepEqual(parseAttachReply('0\n'), { status: 0, output: '' });
  assert.deepEqual(parseAttachReply('101\nProtocol mismatch'), { status: 101, output: 'Protocol mismatch' });
  assert.throws(() => parseAttachReply('garbage'), /without a status line/);
});

test('namespace pid is the last NSpid field', () => {
  assert.equal(namespacePid(4242, 'Name:\tjava\nNSpid:\t4242\t7\nPPid:\t1\n'), 7);
  assert.equal(namespacePid(4242, 'Name:\tjava\nNSpid:\t4242\n'), 4242);
  assert.equal(namespacePid(4242, 'Name:\tjava\n'), 4242);
});

test('a full exchange with a listener that speaks the protocol', async (t) => {
  // A stand-in /proc for pid 4242 (namespace pid 7) whose /tmp already holds the socket, so
  // no signal is sent: the listener below plays HotSpot's part.
  const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'att-'));
  t.after(() => fs.rmSync(proc, { recursive: true, force: true }));
  const dir = path.join(proc, '4242');
  fs.mkdirSync(path.join(dir, 'root', 'tmp'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'maps'), '7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/jvm/x/lib/server/libjvm.so\n');
  fs.writeFileSync(path.join(dir, 'cmdline'), 'java\0-cp\0.\0Main\0');
  fs.writeFileSync(path.join(dir, 'status'), 'Name:\tjava\nNSpid:\t4242\t7\n');
  const received: Buffer[] = [];
  const server = net.createServer((c) => {
    const chunks: Buffer[] = [];
    c.on('data', (d) => {
      chunks.push(d);
      const all = Buffer.concat(chunks);
      if (all.toString('latin1').split('\0').length - 1 >= 5) {
        received.push(all);
        c.end('0\nCompiler.perfmap written\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(path.join(dir, 'root', 'tmp', '.java_pid7'), r));
  t.after(() => server.close());
  const out = await attachCommand(4242, 'jcmd', ['Compiler.perfmap'], { procRoot: proc, timeoutMs: 3000 });
  assert.equal(out, 'Compiler.perfmap written\n');
  assert.equal(received[0].toString('latin1'), '1\0jcmd\0Compiler.perfmap\0\0\0');
});

test('processes that are not JVMs are refused (no SIGQUIT to them)', async (t) => {
  const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'att-'));
  t.after(() => fs.rmSync(proc, { recursive: true, force: true }));
  fs.mkdirSync(path.join(proc, '5'));
  fs.writeFileSync(path.join(proc, '5', 'maps'), '7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n');
  fs.writeFileSync(path.join(proc, '5', 'cmdline'), 'bash\0');
  await assert.rejects(attachCommand(5, 'jcmd', ['Compiler.perfmap'], { procRoot: proc }), /not a HotSpot JVM/);
  fs.writeFileSync(path.join(proc, '5', 'maps'), '7f00-7f10 r-xp 00000000 08:01 1 /j/lib/server/libjvm.so\n');
  fs.writeFileSync(path.join(proc, '5', 'cmdline'), 'java\0-Xrs\0Main\0');
  await assert.rejects(attachCommand(5, 'jcmd', ['Compiler.perfmap'], { procRoot: proc }), /-Xrs/);
});
