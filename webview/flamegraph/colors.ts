// Frame colors by kind (native red-orange, kernel yellow, JIT green, interpreter aqua, the
// palette flamegraph.pl uses for Java), varied by a name hash so neighbours differ, and with
// lightness chosen for the current theme. Pure.
import type { FrameKind } from '../../extension/shared/flamegraph/profileData';

const HUES: Record<FrameKind, [number, number]> = {
  native: [0, 28],
  kernel: [38, 58],
  jit: [90, 135],
  interpreted: [172, 198],
};

export function nameHash(name: string): number {
  // FNV-1a over the name without arguments, so overloads share a color.
  const base = name.replace(/\(.*$/, '');
  let h = 0x811c9dc5;
  for (let i = 0; i < base.length; i++) {
    h ^= base.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) / 0xffffffff;
}

export function frameColor(kind: FrameKind, name: string, dark: boolean): string {
  const [a, b] = HUES[kind];
  const t = nameHash(name);
  const hue = a + (b - a) * t;
  const light = dark ? 38 + 10 * t : 62 + 10 * t;
  const sat = dark ? 55 : 75;
  return `hsl(${hue.toFixed(1)},${sat}%,${light.toFixed(1)}%)`;
}

export const KIND_LABEL: Record<FrameKind, string> = { native: 'native', kernel: 'kernel', jit: 'JIT Java', interpreted: 'interpreted Java' };
