// Frame colors by kind (native red-orange, kernel yellow, JIT/C2 green, inlined aqua: the
// palette flamegraph.pl uses for Java), and for Java frames of known type (agent profiles) C1
// yellow-green and interpreted blue, as async-profiler tells its frame types apart; varied by a
// name hash so neighbours differ, with lightness chosen for the current theme. Pure.
import type { FrameKind, JavaFrameType } from '../../extension/model/flamegraph/profileData';
import type { ThreadState } from '../../extension/protocol/profile';

/** What decides a frame's color: its kind, refined by its Java frame type. */
export type ColorClass = FrameKind | 'c1' | 'inlined';

const HUES: Record<ColorClass, [number, number]> = {
  native: [0, 28],
  kernel: [38, 58],
  jit: [90, 135],
  c1: [66, 84],
  inlined: [172, 198],
  interpreted: [205, 228],
};

export function colorClass(kind: FrameKind, javaType?: JavaFrameType): ColorClass {
  if (javaType === 'c1' || javaType === 'inlined') return javaType;
  if (javaType === 'interpreted') return 'interpreted';
  return kind; // C2 and compiled-at-unknown-tier frames are 'jit'
}

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

export function frameColor(kind: FrameKind, name: string, dark: boolean, javaType?: JavaFrameType): string {
  const [a, b] = HUES[colorClass(kind, javaType)];
  const t = nameHash(name);
  const hue = a + (b - a) * t;
  const light = dark ? 38 + 10 * t : 62 + 10 * t;
  const sat = dark ? 55 : 75;
  return `hsl(${hue.toFixed(1)},${sat}%,${light.toFixed(1)}%)`;
}

export const KIND_LABEL: Record<FrameKind, string> = { native: 'native', kernel: 'kernel', jit: 'JIT Java', interpreted: 'interpreted Java' };

export const JAVA_TYPE_LABEL: Record<JavaFrameType, string> = {
  interpreted: 'Java, interpreted',
  c1: 'Java, C1-compiled',
  c2: 'Java, C2-compiled',
  compiled: 'Java, compiled (tier unknown)',
  inlined: 'Java, inlined into its caller',
};

/** The tooltip's description of a frame. */
export function frameLabel(f: { kind: FrameKind; javaType?: JavaFrameType }): string {
  return f.javaType ? JAVA_TYPE_LABEL[f.javaType] : KIND_LABEL[f.kind];
}

/** Legend entries: label and the swatch's class (drawn at the middle of its hue range). */
export const LEGEND: [string, ColorClass][] = [
  ['native', 'native'],
  ['kernel', 'kernel'],
  ['JIT / C2 Java', 'jit'],
  ['C1 Java', 'c1'],
  ['inlined Java', 'inlined'],
  ['interpreted Java', 'interpreted'],
];

export function swatchColor(c: ColorClass): string {
  const [a, b] = HUES[c];
  return `hsl(${(a + b) / 2},75%,62%)`;
}

/**
 * Off-CPU and wall profiles colour each box by where the thread was (the state at its root):
 * on CPU warm red, sleeping blue, I/O purple, lock amber, preempted green, carrier idle pink;
 * varied by name as above.
 */
const STATE_HUES: Record<ThreadState, [number, number]> = {
  oncpu: [2, 24],
  sleep: [198, 222],
  io: [262, 288],
  lock: [36, 52],
  preempted: [140, 165],
  idle: [300, 320],
};

export function stateColor(state: ThreadState, name: string, dark: boolean): string {
  const [a, b] = STATE_HUES[state];
  const t = nameHash(name);
  const light = dark ? 36 + 12 * t : 60 + 12 * t;
  return `hsl(${(a + (b - a) * t).toFixed(1)},${dark ? 50 : 70}%,${light.toFixed(1)}%)`;
}

export function stateSwatch(state: ThreadState): string {
  const [a, b] = STATE_HUES[state];
  return `hsl(${(a + b) / 2},70%,62%)`;
}
