// Which kernel a feature needs: the release string parsed to major.minor and compared (no kernel needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { releaseAtLeast, releaseVersion } from '../../extension/sys/kernelRelease';

test('kernel releases parse to major.minor and compare', () => {
  assert.deepEqual(releaseVersion('6.1.0-18-amd64'), [6, 1]);
  assert.deepEqual(releaseVersion('5.15.0-91-generic'), [5, 15]);
  assert.equal(releaseVersion('weird'), undefined);
  assert.equal(releaseAtLeast('5.15.0-91-generic', 5, 15), true);
  assert.equal(releaseAtLeast('5.14.21-150400', 5, 15), false);
  assert.equal(releaseAtLeast('4.18.0-513.el8.x86_64', 5, 15), false);
  assert.equal(releaseAtLeast('6.18.44-fc', 5, 15), true);
  assert.equal(releaseAtLeast('5.4.0-1', 5, 15), false, 'minor compares as a number, not a string');
  assert.equal(releaseAtLeast('weird', 5, 15), true, 'an unparsable release is left to the load to judge');
});
