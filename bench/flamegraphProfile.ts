// Synthetic profiles for the flame-graph benchmarks, deterministic (seeded):
// - programLike: a random call tree of 80k call sites over 50k distinct functions (shared
//   helpers appear under many callers), depth ~50, each sample a root-to-site path;
// - worstCase: every sample a unique random path below a few hundred shared trunks, so the call
//   tree has millions of nodes (nothing merges).
import type { FlameFrame, FlameProfile, FrameKind } from '../extension/model/flamegraph/profileData';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 0x100000000;
  };
}

function frameTable(n: number): FlameFrame[] {
  const kinds: FrameKind[] = ['native', 'native', 'jit', 'interpreted', 'kernel'];
  return Array.from({ length: n }, (_, i) => ({
    name: `${['com.example.Service', 'libfoo::Parser', 'do_syscall', 'java.util.HashMap'][i % 4]}.method${i}(${i % 7 ? 'int' : 'long, java.lang.String'})`,
    kind: kinds[i % kinds.length],
    file: i % 3 === 0 ? `/src/module${i % 100}/file${i % 1000}.c` : undefined,
    line: i % 3 === 0 ? 1 + (i % 500) : undefined,
  }));
}

export function programLike(samples = 100_000, frames = 50_000, seed = 7): FlameProfile {
  const rand = rng(seed);
  const sites = Math.round(frames * 1.6);
  const parent = new Int32Array(sites);
  const fn = new Int32Array(sites);
  parent[0] = -1;
  for (let i = 1; i < sites; i++) {
    parent[i] = Math.floor(i * (0.6 + 0.38 * rand()));
    fn[i] = i < frames ? i : Math.floor(rand() * frames);
  }
  const stacks = [];
  for (let s = 0; s < samples; s++) {
    // Every function once as a leaf first (so all are present), then uniformly random sites.
    const site = s < frames ? s : Math.floor(rand() * sites);
    const st: number[] = [];
    for (let n = site; n >= 0; n = parent[n]) st.push(fn[n]);
    stacks.push({ frames: st.reverse(), weight: 1 });
  }
  return { name: 'program-like', frames: frameTable(frames), stacks, total: samples };
}

export function worstCase(samples = 100_000, frames = 50_000, seed = 7): FlameProfile {
  const rand = rng(seed);
  const trunks: number[][] = [];
  for (let t = 0; t < 300; t++) {
    const d = 4 + Math.floor(rand() * 9);
    trunks.push(Array.from({ length: d }, (_, i) => (i === 0 ? t % 5 : Math.floor(rand() * 2000))));
  }
  const stacks = [];
  let next = 2000; // frames >= 2000 are handed out in order first so all of them appear
  for (let s = 0; s < samples; s++) {
    const trunk = trunks[Math.floor(rand() * rand() * trunks.length)];
    const depth = 8 + Math.floor(rand() * 57);
    const st = trunk.slice(0, Math.min(trunk.length, depth));
    while (st.length < depth) st.push(next < frames ? next++ : 2000 + Math.floor(rand() * rand() * (frames - 2000)));
    stacks.push({ frames: st, weight: 1 });
  }
  return { name: 'worst-case', frames: frameTable(frames), stacks, total: samples };
}
