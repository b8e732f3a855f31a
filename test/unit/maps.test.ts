import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findMapping, mappedFiles, parseMaps } from '../../extension/sys/proc/maps';

const sample = `55d4c0a00000-55d4c0a02000 r--p 00000000 fe:01 1234                       /usr/bin/cat
55d4c0a02000-55d4c0a07000 r-xp 00002000 fe:01 1234                       /usr/bin/cat
7f1c2a000000-7f1c2a028000 r--p 00000000 fe:01 5678                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a028000-7f1c2a1bd000 r-xp 00028000 fe:01 5678                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2b000000-7f1c2b001000 rw-p 00000000 00:00 0 
7f1c2c000000-7f1c2c010000 r-xp 00000000 fe:01 999                        /tmp/my lib (1).so (deleted)
7ffd1a3f0000-7ffd1a412000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`;

test('parseMaps reads addresses, perms, offsets, inodes and paths', () => {
  const maps = parseMaps(sample);
  assert.equal(maps.length, 8);
  assert.equal(maps[1].start, 0x55d4c0a02000n);
  assert.equal(maps[1].perms, 'r-xp');
  assert.equal(maps[1].offset, 0x2000n);
  assert.equal(maps[1].inode, 1234);
  assert.equal(maps[1].path, '/usr/bin/cat');
  assert.equal(maps[4].path, '');
  assert.equal(maps[6].path, '[stack]');
  assert.equal(maps[7].end, 0xffffffffff601000n, 'addresses above 2^53 stay exact');
});

test('parseMaps keeps spaces in paths and strips the (deleted) mark', () => {
  const m = parseMaps(sample)[5];
  assert.equal(m.path, '/tmp/my lib (1).so');
  assert.equal(m.deleted, true);
});

test('findMapping finds the mapping holding an address', () => {
  const maps = parseMaps(sample);
  assert.equal(findMapping(maps, 0x7f1c2a030000n)?.offset, 0x28000n);
  assert.equal(findMapping(maps, 0x7f1c2a028000n)?.perms, 'r-xp', 'start is inclusive');
  assert.equal(findMapping(maps, 0x7f1c2a1bd000n), undefined, 'end is exclusive');
  assert.equal(findMapping(maps, 0x1000n), undefined);
});

test('mappedFiles lists distinct files by basename', () => {
  assert.deepEqual(mappedFiles(parseMaps(sample), /^libc[.-]/), ['/usr/lib/x86_64-linux-gnu/libc.so.6']);
  assert.deepEqual(mappedFiles(parseMaps(sample), /^libjvm\.so$/), []);
});

test('parseMaps of this very process finds node and libc', () => {
  const fs = require('node:fs') as typeof import('node:fs');
  const maps = parseMaps(fs.readFileSync('/proc/self/maps', 'utf8'));
  assert.ok(maps.length > 10);
  assert.ok(mappedFiles(maps, /^libc[.-]/).length === 1);
});
