// Colours of the differential flame graph: red where a call path's self share grew, blue where
// it shrank, saturation by the size of the change against the largest one (at least 1 point,
// so noise in two near-identical profiles stays pale), grey when it did not move. Pure.

/** The change (percentage points) that gets full colour. */
export function diffScale(maxDelta: number): number {
  return Math.max(1, maxDelta);
}

export function diffColor(delta: number, scale: number, dark: boolean): string {
  const t = Math.min(1, Math.abs(delta) / scale);
  if (t < 0.02) return dark ? 'hsl(0,0%,42%)' : 'hsl(0,0%,82%)';
  const hue = delta > 0 ? 0 : 215;
  const sat = Math.round(25 + 65 * t);
  const light = dark ? Math.round(42 - 8 * t) : Math.round(85 - 30 * t);
  return `hsl(${hue},${sat}%,${light}%)`;
}

/** "+2.5 pt" / "−1.0 pt" */
export function signedPoints(x: number): string {
  return `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(1)} pt`;
}
