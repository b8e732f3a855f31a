// Refuses oversized JSON-RPC messages before they are buffered. vscode-jsonrpc's reader has no
// size limit, so this pass-through stream reads the base-protocol framing (headers, then
// Content-Length bytes) and drops a body over the limit instead of handing it on. It re-frames
// what it passes, so garbage between messages cannot desynchronise the reader behind it.
import { Transform, type Readable, type TransformCallback } from 'node:stream';

export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const MAX_HEADER_BYTES = 8192;

export class LimitedReader extends Transform {
  private header = Buffer.alloc(0);
  /** bytes of the current body still to pass (>0) or to drop (<0) */
  private remaining = 0;

  constructor(
    source: Readable,
    private readonly limit: number,
    private readonly onRefused: (bytes: number) => void,
  ) {
    super();
    source.pipe(this);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let buf = chunk;
    while (buf.length > 0) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, buf.length);
        this.push(buf.subarray(0, n));
        this.remaining -= n;
        buf = buf.subarray(n);
        continue;
      }
      if (this.remaining < 0) {
        const n = Math.min(-this.remaining, buf.length);
        this.remaining += n;
        buf = buf.subarray(n);
        continue;
      }
      this.header = Buffer.concat([this.header, buf]);
      buf = Buffer.alloc(0);
      const end = this.header.indexOf('\r\n\r\n');
      if (end < 0) {
        // Headers without an end: garbage. Drop it rather than grow without bound.
        if (this.header.length > MAX_HEADER_BYTES) {
          this.onRefused(this.header.length);
          this.header = Buffer.alloc(0);
        }
        break;
      }
      const head = this.header.subarray(0, end + 4);
      const rest = this.header.subarray(end + 4);
      this.header = Buffer.alloc(0);
      const len = contentLength(head);
      if (len < 0) {
        this.onRefused(head.length);
      } else if (len > this.limit) {
        this.onRefused(len);
        this.remaining = -len;
      } else {
        // A clean header, not the received one: bytes before it (a stray CRLF, the tail of a
        // body shorter than its Content-Length) would make vscode-jsonrpc's header parser throw
        // and lose the following messages until the stream happened to realign.
        this.push(Buffer.from(`Content-Length: ${len}\r\n\r\n`, 'ascii'));
        this.remaining = len;
      }
      buf = rest;
    }
    done();
  }
}

/**
 * The Content-Length of a header block, or -1 when no line of it is exactly that header.
 * Decoded as latin1, not 'ascii': Node's ascii decoder clears the high bit, so a stray 0xB4 byte
 * after "Content-Length:" would read as the digit 4 and the frame after it would be swallowed.
 */
export function contentLength(head: Buffer): number {
  for (const line of head.toString('latin1').split('\r\n')) {
    const m = /^content-length:[ \t]*(\d+)[ \t]*$/i.exec(line);
    if (m) return Number(m[1]);
  }
  return -1;
}
