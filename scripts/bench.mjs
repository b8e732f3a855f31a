#!/usr/bin/env node
// `npm run bench -- [--quick] [--json] [--only GROUPS] [--out FILE]`: the benchmark suite
// (bench/main.ts, TypeScript through tsx). Runs against the build outputs in dist/: run
// `npm run build` first. Needs root for the tracer rows (the others run without it).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', 'main.ts'), ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
// Ctrl-C reaches the whole foreground group; wait for the suite to stop its tracers and exit.
process.on('SIGINT', () => undefined);
child.on('exit', (code, signal) => process.exit(code ?? (signal === "SIGINT" ? 130 : 1)));
