// A running loader's maps for the map view: map ids from its fdinfo, bpftool dumps as tables
// (global-variable sections shown as their variables), ring buffers named but not dumped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mapIdsFromFdinfo, mapViewFromDump, MAX_ROWS } from '../../extension/authoring/bpftoolMaps';

test('map ids come from fdinfo lines, once each; other fds are ignored', () => {
  const infos = ['pos:\t0\nflags:\t02\n', 'pos:\t0\nmap_type:\t2\nmap_id:\t34466\n', 'map_type:\t27\nmap_id:\t34787\n', 'map_type:\t2\nmap_id:\t34466\n', 'prog_type:\t5\nprog_id:\t9\n'];
  assert.deepEqual(mapIdsFromFdinfo(infos), [{ id: 34466, type: 2 }, { id: 34787, type: 27 }]);
});

test('a .bss dump shows its variables; hash dumps keep formatted keys and values', () => {
  const bss = mapViewFromDump({ id: 1, name: 'minimal_.bss', type: 'array' }, 2, [
    { key: ['0x00'], value: ['0x4f'], formatted: { value: { '.bss': [{ stats: { calls: 79, last_tgid: 27080, unused: 0 } }] } } },
  ]);
  assert.deepEqual(bss, { kind: 'table', name: 'minimal_.bss', mapType: 'array', rows: [{ key: '.bss', value: { stats: { calls: 79, last_tgid: 27080, unused: 0 } } }], entries: 1 });
  const hash = mapViewFromDump({ id: 2, name: 'counts', type: 'hash' }, 1, [{ key: ['0x01'], value: ['0x02'], formatted: { key: 1, value: 2 } }, { key: ['0x03'], value: ['0x04'] }]);
  assert.equal(hash.kind, 'table');
  if (hash.kind === 'table') assert.deepEqual(hash.rows, [{ key: 1, value: 2 }, { key: ['0x03'], value: ['0x04'] }]);
});

test('ring buffers and failed dumps are named with the reason; big maps are capped', () => {
  assert.equal(mapViewFromDump({ id: 3, name: 'events', type: 'ringbuf' }, 27, undefined).kind, 'other');
  assert.match((mapViewFromDump({ id: 4 }, 1, undefined) as { reason: string }).reason, /could not dump/);
  const big = mapViewFromDump({ id: 5, name: 'big', type: 'hash' }, 1, Array.from({ length: 500 }, (_, i) => ({ formatted: { key: i, value: i } })));
  assert.ok(big.kind === 'table' && big.rows.length === MAX_ROWS && big.entries === 500);
});
