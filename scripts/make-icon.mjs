#!/usr/bin/env node
// Draws media/icon.png (128×128, the Marketplace/Extensions view icon) from the SVG below, rendered by
// Debian's Chromium through playwright-core, so the icon is reproducible without an image editor.
// Usage: node scripts/make-icon.mjs [out.png]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] ?? path.join(root, 'media', 'icon.png'));

// A log2 histogram (the views' common shape) under the name, on a dark tile; bees are overdone.
const bars = [18, 34, 58, 46, 26, 12]
  .map((h, i) => `<rect x="${20 + i * 15}" y="${104 - h}" width="12" height="${h}" rx="2" fill="${i === 2 ? '#f5a623' : '#4fc3f7'}"/>`)
  .join('');
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128">
  <rect x="2" y="2" width="124" height="124" rx="22" fill="#1b2838"/>
  <text x="64" y="40" text-anchor="middle" font-family="DejaVu Sans, sans-serif" font-weight="bold" font-size="28" fill="#ffffff">eBPF</text>
  <line x1="16" y1="105" x2="112" y2="105" stroke="#8aa0b8" stroke-width="2"/>
  ${bars}
</svg>`;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 128, height: 128 } });
  await page.setContent(`<html><body style="margin:0;background:transparent">${svg}</body></html>`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  await page.screenshot({ path: out, omitBackground: true, clip: { x: 0, y: 0, width: 128, height: 128 } });
  console.log(`make-icon: wrote ${path.relative(process.cwd(), out)}`);
} finally {
  await browser.close();
}
