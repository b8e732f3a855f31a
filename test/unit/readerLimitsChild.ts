// Child process of readerLimits.test.ts: reads one profile file with the in-process reader
// (loadProfileBytes), or with `session` one saved session file as the editor does, and prints
// what it cost, as JSON: CPU and wall time, the peak RSS over the RSS before reading, and the
// error (class, message, limit) or what was read. A child, so the peak RSS is this file's alone.
import fs from 'node:fs';
import path from 'node:path';
import { loadProfileBytes } from '../../extension/sys/profileFile';
import { ImportError, LimitError } from '../../extension/model/readLimits';
import { readSession } from '../../extension/model/sessionFile';
import { readSessionTextSync } from '../../extension/sys/sessionText';

const file = process.argv[2];
// "session": a saved session file, read as the editor reads it (bounded read, shape check, parse,
// validation), from the path: the read is part of what is measured
const session = process.argv[3] === 'session';
const bytes = session ? Buffer.alloc(0) : fs.readFileSync(file);
const rss0 = process.memoryUsage().rss;
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
const out: Record<string, unknown> = {};
try {
  if (session) out.tracer = readSession(readSessionTextSync(file), path.basename(file)).tracer;
  else out.stacks = loadProfileBytes(bytes, path.basename(file)).flame.stacks.length;
} catch (e) {
  out.error = { importError: e instanceof ImportError, class: (e as Error).constructor.name, message: (e as Error).message, limit: e instanceof LimitError ? e.limit : undefined };
}
const cpu = process.cpuUsage(cpu0);
out.wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
out.cpuMs = (cpu.user + cpu.system) / 1000;
out.growthMB = (process.resourceUsage().maxRSS * 1024 - rss0) / 1048576;
process.stdout.write(JSON.stringify(out));
