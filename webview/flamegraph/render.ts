// Canvas drawing of one flame tree: draws only the boxes layout() returned (each at least a
// pixel wide), flame (root at the bottom) or icicle (root at the top), with search matches
// highlighted. Hit testing goes back through the model.
import { hitTest, layout, ROOT, type FlameTree, type Layout } from '../../extension/model/flamegraph/model';
import type { FlameProfile } from '../../extension/model/flamegraph/profileData';
import { frameColor } from './colors';

export const ROW_HEIGHT = 17;
/** opacity of the boxes a search does not match */
const DIM_ALPHA = 0.35;

export class FlameCanvas {
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  tree: FlameTree;
  profile: FlameProfile;
  focus = ROOT;
  icicle = false;
  /** per frame: 1 = matches the search; undefined = no search */
  matches?: Uint8Array;
  /** frame to outline (the sandwich's function) */
  emphasized = -1;
  /** colour of a node instead of its frame kind's (the diff view's red/blue), or undefined */
  nodeColor?: (node: number, dark: boolean) => string | undefined;
  /** node the keyboard (or a click) selected: outlined */
  selected = -1;
  private lay?: Layout;
  private cssWidth = 0;
  private charWidth = 7;
  lastDrawMs = 0;
  // Colour strings by frame id for one profile and theme: frameColor hashes the name and builds
  // an hsl() string, a noticeable part of drawing thousands of boxes.
  private colors: string[] = [];
  private colorsFor?: { profile: FlameProfile; dark: boolean };

  constructor(parent: HTMLElement, tree: FlameTree, profile: FlameProfile) {
    this.canvas = document.createElement('canvas');
    parent.appendChild(this.canvas);
    this.ctx = this.canvas.getContext('2d')!;
    this.tree = tree;
    this.profile = profile;
  }

  setTree(tree: FlameTree, profile: FlameProfile): void {
    this.tree = tree;
    this.profile = profile;
    this.focus = ROOT;
    this.selected = -1;
    this.lay = undefined;
  }

  get layoutResult(): Layout | undefined {
    return this.lay;
  }

  /** Lays out for the current width and draws. */
  draw(): void {
    const t0 = performance.now();
    const width = Math.max(50, this.canvas.parentElement!.clientWidth);
    const dpr = window.devicePixelRatio || 1;
    if (!this.lay || this.lay.focus !== this.focus || this.lay.width !== width) this.lay = layout(this.tree, width, this.focus, 1);
    const l = this.lay;
    const rows = l.count ? l.depth[l.count - 1] + 1 : 1;
    const height = rows * ROW_HEIGHT + 2;
    if (this.cssWidth !== width || this.canvas.height !== Math.round(height * dpr)) {
      this.cssWidth = width;
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.height = `${height}px`;
    }
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const style = getComputedStyle(document.body);
    const dark = document.body.classList.contains('vscode-dark') || document.body.classList.contains('vscode-high-contrast');
    const fg = dark ? '#fff' : '#000';
    const matchColor = style.getPropertyValue('--vscode-editor-findMatchHighlightBackground').trim() || '#e040e0';
    const outline = style.getPropertyValue('--vscode-focusBorder').trim() || '#0af';
    ctx.font = `11px ${style.getPropertyValue('--vscode-editor-font-family') || 'monospace'}`;
    this.charWidth = ctx.measureText('abcdefghijklmnopqrstuvwxyz').width / 26 || 7;
    ctx.textBaseline = 'middle';
    const frames = this.profile.frames;
    if (this.colorsFor?.profile !== this.profile || this.colorsFor.dark !== dark) {
      this.colors = [];
      this.colorsFor = { profile: this.profile, dark };
    }
    const m = this.matches;
    // Boxes first, then every label with one fill style: switching fillStyle per box (box colour,
    // then the text colour) made the canvas parse twice as many colour strings.
    const labelAt: number[] = [];
    const labels: string[] = [];
    let alpha = 1;
    ctx.globalAlpha = 1;
    for (let i = 0; i < l.count; i++) {
      const n = l.node[i];
      const f = this.tree.frame[n];
      const y = this.rowY(l.depth[i], height);
      const x = l.x[i];
      const w = l.w[i];
      const frame = f >= 0 ? frames[f] : undefined;
      const name = frame ? frame.name : 'all';
      const dim = m && (f < 0 || !m[f]);
      const a = dim ? DIM_ALPHA : 1;
      if (a !== alpha) ctx.globalAlpha = alpha = a;
      ctx.fillStyle = m && f >= 0 && m[f] ? matchColor : (this.nodeColor?.(n, dark) ?? (frame ? (this.colors[f] ??= frameColor(frame.kind, name, dark, frame.javaType)) : dark ? '#666' : '#bbb'));
      ctx.fillRect(x, y, Math.max(1, w - 0.5), ROW_HEIGHT - 1);
      if ((f >= 0 && f === this.emphasized) || n === this.selected) {
        ctx.strokeStyle = outline;
        ctx.strokeRect(x + 0.5, y + 0.5, Math.max(1, w - 1.5), ROW_HEIGHT - 2);
      }
      if (w > 3 * this.charWidth) {
        const max = Math.floor((w - 6) / this.charWidth);
        labelAt.push(i);
        labels.push(name.length > max ? `${name.slice(0, Math.max(1, max - 1))}…` : name);
      }
    }
    ctx.fillStyle = fg;
    for (let k = 0; k < labelAt.length; k++) {
      const i = labelAt[k];
      const f = this.tree.frame[l.node[i]];
      const a = m && (f < 0 || !m[f]) ? DIM_ALPHA : 1;
      if (a !== alpha) ctx.globalAlpha = alpha = a;
      ctx.fillText(labels[k], l.x[i] + 3, this.rowY(l.depth[i], height) + ROW_HEIGHT / 2);
    }
    ctx.globalAlpha = 1;
    this.lastDrawMs = performance.now() - t0;
  }

  private rowY(depth: number, height: number): number {
    const first = this.lay && this.lay.count ? this.lay.depth[0] : 0;
    const row = depth - first;
    return this.icicle ? 1 + row * ROW_HEIGHT : height - 1 - (row + 1) * ROW_HEIGHT;
  }

  /** The node under a point in CSS pixels relative to the canvas, or -1. */
  nodeAt(px: number, py: number): number {
    const l = this.lay;
    if (!l || l.count === 0) return -1;
    const height = this.canvas.clientHeight;
    const row = this.icicle ? Math.floor((py - 1) / ROW_HEIGHT) : Math.floor((height - 1 - py) / ROW_HEIGHT);
    const i = hitTest(l, l.depth[0] + row, px);
    return i < 0 ? -1 : l.node[i];
  }
}
