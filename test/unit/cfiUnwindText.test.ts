// The profile header for stacks walked by unwind tables in the kernel (--unwind cfi), and the
// stop notes a walk that ended early leaves as its last frame.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unwindDetails, unwindSummary } from '../../extension/model/unwindText';
import { cfiStopNote, CFI_STOP } from '../../extension/tracers/cfiTables';

test('the header names the kernel table walk, its files and size; the tooltip lists early stops', () => {
  const u = { mode: 'cfi' as const, cfiTables: { files: 3, rows: 30700, bytes: 368400, fpMappings: 1, nsPerWalk: 4200 }, cfiStops: { end: 500, 'no-mapping': 2, read: 0 } };
  assert.equal(unwindSummary(u), 'stacks: unwind tables in the kernel (--unwind cfi: 3 files, 360 KiB)');
  const d = unwindDetails(u) ?? '';
  assert.match(d, /walked in the kernel by unwind tables compiled from each file's \.eh_frame/);
  assert.match(d, /stopped before the outermost frame: no-mapping 2$/m);
  assert.doesNotMatch(d, /read 0/);
});

test('every stop but the outermost frame leaves a note saying why', () => {
  for (const s of CFI_STOP) {
    if (s === 'end') assert.equal(cfiStopNote(s), undefined);
    else assert.match(cfiStopNote(s) ?? '', /^\[stack (ends|cut)/);
  }
});
