// Canvas set-up shared by the views' charts (histogram, GC timeline, heat map, JVM lanes): every
// redraw sizes the canvas for the device pixel ratio the same way, so they all stay sharp on
// HiDPI screens and draw in CSS pixels.

/**
 * Sizes `canvas` to its CSS width (`fallbackWidth` while it has none, before layout) by
 * `cssHeight` CSS pixels at the device pixel ratio, and clears it. Draw on `ctx` in CSS pixels.
 */
export function sizeCanvas(canvas: HTMLCanvasElement, cssHeight: number, fallbackWidth = 600): { ctx: CanvasRenderingContext2D; width: number } {
  const dpr = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || fallbackWidth;
  // Only what changed is set: a canvas given its own size again still reallocates its bitmap,
  // which live views (redrawn every update) would pay each time.
  if (canvas.style.height !== `${cssHeight}px`) canvas.style.height = `${cssHeight}px`;
  const w = Math.round(width * dpr);
  const h = Math.round(cssHeight * dpr);
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  const ctx = canvas.getContext('2d')!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  // A kept bitmap keeps its context state too: start each redraw from the defaults it relies on.
  ctx.globalAlpha = 1;
  ctx.lineWidth = 1;
  ctx.clearRect(0, 0, width, cssHeight);
  return { ctx, width };
}
