// Loads the native addon next to the bundle (dist/ebpf_studio.node) or from the node-gyp build
// folder during development. Its surface is declared once, in native/index.d.ts.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { StudioError } from '../protocol/errors';

export type Addon = typeof import('../../native/index');

let cached: Addon | undefined;

export function addonCandidates(assetDir: string): string[] {
  return [path.join(assetDir, 'ebpf_studio.node'), path.resolve(assetDir, '..', 'native', 'build', 'Release', 'ebpf_studio.node')];
}

export function loadAddon(assetDir: string): Addon {
  if (cached) return cached;
  const file = addonCandidates(assetDir).find((f) => fs.existsSync(f));
  if (!file) {
    throw new StudioError('internal', `the native addon is missing (looked for ${addonCandidates(assetDir).join(', ')}): run "npm run build"`);
  }
  // createRequire keeps esbuild from trying to bundle the .node file.
  cached = createRequire(__filename)(file) as Addon;
  return cached;
}

/** The folder with dist/ build outputs, for bundles living in dist/ and for tests running from source. */
export function defaultAssetDir(): string {
  const here = __dirname;
  if (fs.existsSync(path.join(here, 'bpf'))) return here;
  let dir = here;
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'dist');
    dir = path.dirname(dir);
  }
  return path.join(here, 'dist');
}
