// A user's BPF object: asked once per content hash in the editor; the helper side reads it once,
// refuses non-BPF files, oversized objects and sources, and loads a private copy of what it hashed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installVscodeMock } from '../mocks/vscode';

const vscode = installVscodeMock();
 
const { openUserObject, readRegularOnce, readSourceOnce, notBpfElf, MAX_SOURCE_BYTES } = require('../../extension/sys/userObject') as typeof import('../../extension/sys/userObject');
const { confirmObject, initObjectConfirm } = require('../../extension/editor/helperClient/objectConfirm') as typeof import('../../extension/editor/helperClient/objectConfirm');
 

function bpfElf(extra = ''): Buffer {
  const b = Buffer.alloc(64 + extra.length);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2; // 64-bit
  b[5] = 1; // little-endian
  b.writeUInt16LE(247, 18); // EM_BPF
  b.write(extra, 64);
  return b;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-userobj-'));
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

test('a confirmed BPF object is handed over as a private copy of exactly the bytes hashed', () => {
  const f = path.join(dir, 'a.bpf.o');
  fs.writeFileSync(f, bpfElf('one'));
  const u = openUserObject(f, sha(bpfElf('one')));
  try {
    assert.notEqual(u.path, f);
    fs.writeFileSync(f, bpfElf('two')); // rewritten after the check
    assert.deepEqual(fs.readFileSync(u.path), bpfElf('one'), 'libbpf gets what was checked');
    assert.equal(fs.statSync(path.dirname(u.path)).mode & 0o777, 0o700);
  } finally {
    u.dispose();
  }
  assert.equal(fs.existsSync(u.path), false);
});

test('refusals: no confirmation, another hash, not ELF, not BPF, not a regular file, relative, too big', () => {
  const f = path.join(dir, 'b.bpf.o');
  fs.writeFileSync(f, bpfElf());
  assert.throws(() => openUserObject(f, undefined), /needs your confirmation/);
  assert.throws(() => openUserObject(f, 'nothex'), /needs your confirmation/);
  assert.throws(() => openUserObject(f, '0'.repeat(64)), /changed since you confirmed it/);
  const x86 = Buffer.from(bpfElf());
  x86.writeUInt16LE(62, 18);
  fs.writeFileSync(f, x86);
  assert.throws(() => openUserObject(f, sha(x86)), /e_machine 62\), not BPF/);
  fs.writeFileSync(f, 'hello');
  assert.throws(() => openUserObject(f, sha(Buffer.from('hello'))), /not an ELF object file/);
  assert.throws(() => openUserObject(dir, 'a'.repeat(64)), /not a regular file/);
  assert.throws(() => openUserObject('rel.o', 'a'.repeat(64)), /must be absolute/);
  assert.throws(() => readRegularOnce('/dev/zero', 100, 'object file'), /not a regular file/);
  const big = path.join(dir, 'big');
  fs.writeFileSync(big, Buffer.alloc(101));
  assert.throws(() => readRegularOnce(big, 100, 'object file'), /101 bytes, over the limit of 100/);
  assert.equal(notBpfElf(bpfElf()), undefined);
});

test('sources for annotations: over 4 MiB, FIFOs and devices are ignored, not read', () => {
  const big = path.join(dir, 'big.bpf.c');
  fs.writeFileSync(big, Buffer.alloc(MAX_SOURCE_BYTES + 1, 0x20));
  assert.equal(readSourceOnce(big), '');
  assert.equal(readSourceOnce('/dev/zero'), '');
  const ok = path.join(dir, 'ok.bpf.c');
  fs.writeFileSync(ok, 'int x;');
  assert.equal(readSourceOnce(ok), 'int x;');
});

test('the editor asks once per object content, with a modal that says it is root-equivalent', async () => {
  const store = new Map<string, unknown>();
  initObjectConfirm({ globalState: { get: (k: string, d?: unknown) => (store.has(k) ? store.get(k) : d), update: async (k: string, v: unknown) => void store.set(k, v) } } as never);
  const asked: { message: string; options: { modal?: boolean; detail?: string } }[] = [];
  let answer: string | undefined = 'Load as Root';
  const orig = vscode.window.showWarningMessage;
  (vscode.window as { showWarningMessage: unknown }).showWarningMessage = async (message: string, options: { modal?: boolean; detail?: string }) => (asked.push({ message, options }), answer);
  try {
    const f = path.join(dir, 'c.bpf.o');
    fs.writeFileSync(f, bpfElf('v1'));
    assert.equal(await confirmObject(f, 'Run BPF Program'), sha(bpfElf('v1')));
    assert.equal(await confirmObject(f, 'Load and Verify'), sha(bpfElf('v1')), 'same content: not asked again');
    assert.equal(asked.length, 1);
    assert.equal(asked[0].options.modal, true);
    assert.match(asked[0].message, /load c\.bpf\.o into the kernel as root/);
    assert.match(asked[0].options.detail!, /as powerful as running it as root/);
    fs.writeFileSync(f, bpfElf('v2'));
    answer = undefined;
    assert.equal(await confirmObject(f, 'Run BPF Program'), undefined, 'a new build is asked again; cancel loads nothing');
    assert.equal(asked.length, 2);
  } finally {
    (vscode.window as { showWarningMessage: unknown }).showWarningMessage = orig;
  }
});
