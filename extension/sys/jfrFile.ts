// Reads a JFR recording from disk one chunk at a time (a recording is a sequence of self-contained
// chunks), so memory is one chunk and what the caller aggregates, however long the file. Each chunk's
// size is checked against the limit before it is read, and the read ends with a JfrError naming the
// byte offset where the file stops making sense (a truncated copy, a corrupted byte).
import fs from 'node:fs';
import { Chunk, CHUNK_HEADER_BYTES, JFR_LIMITS, JfrBudget, readChunkHeader, type EventVisitor, type JfrLimits } from '../model/jfr/chunk';
import { JfrError } from '../model/jfr/cursor';

export interface JfrReadProgress {
  /** bytes read so far, and of the file */
  done: number;
  total: number;
}

export interface JfrFileInfo {
  bytes: number;
  chunks: number;
  major: number;
  minor: number;
  /** ns since the epoch */
  startNanos: number;
  durationNanos: number;
}

function readAt(fd: number, buf: Uint8Array, pos: number): number {
  let got = 0;
  while (got < buf.length) {
    const n = fs.readSync(fd, buf, got, buf.length - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** Visits every event of every chunk of `file`; `onChunk` sees each chunk before its events. */
export function readJfrFile(file: string, visitor: EventVisitor, opts: { limits?: JfrLimits; onChunk?: (c: Chunk) => void; progress?: (p: JfrReadProgress) => void } = {}): JfrFileInfo {
  const limits = opts.limits ?? JFR_LIMITS;
  const budget = new JfrBudget(limits);
  const fd = fs.openSync(file, 'r');
  try {
    const total = fs.fstatSync(fd).size;
    if (total === 0) throw new JfrError(0, 'the file is empty');
    const info: JfrFileInfo = { bytes: total, chunks: 0, major: 0, minor: 0, startNanos: 0, durationNanos: 0 };
    let end = 0;
    for (let pos = 0; pos < total; ) {
      const head = new Uint8Array(Math.min(CHUNK_HEADER_BYTES, total - pos));
      readAt(fd, head, pos);
      const h = readChunkHeader(head, pos, limits);
      if (pos + h.size > total) throw new JfrError(pos + 8, `the chunk at byte ${pos} is ${h.size.toLocaleString('en-US')} bytes but the file ends ${(total - pos).toLocaleString('en-US')} bytes after its start (a truncated recording)`);
      const buf = new Uint8Array(h.size);
      if (readAt(fd, buf, pos) !== h.size) throw new JfrError(pos, 'the file changed while it was read');
      const chunk = new Chunk(buf, h, budget);
      if (info.chunks++ === 0) Object.assign(info, { major: h.major, minor: h.minor, startNanos: h.startNanos });
      end = Math.max(end, h.startNanos + h.durationNanos);
      opts.onChunk?.(chunk);
      chunk.events(visitor);
      pos += h.size;
      opts.progress?.({ done: pos, total });
    }
    info.durationNanos = end - info.startNanos;
    return info;
  } finally {
    fs.closeSync(fd);
  }
}
