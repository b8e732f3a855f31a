// The HotSpot attach protocol: request framing, reply parsing, namespace pids, and refusals of
// processes that are not JVMs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
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

// The exchange itself (trigger file, socket, reply) needs a real JVM: it is done as the JVM's owner
// inside its root (extension/sys/asUser.ts), tested in test/kernel/javaAgent*.test.ts and attacks.test.ts.

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
