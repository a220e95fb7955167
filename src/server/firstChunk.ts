import * as http2 from 'node:http2';
import { MAX_DESCRIPTORS } from './envoy.js';
import { MAX_FIELDS } from './rlsWire.js';

/**
 * prefixRefusal — what is wrong with a RateLimitRequest from the first bytes of its gRPC frame alone (`chunk`: the
 * stream's first DATA, the 5-byte frame header then the message's start), or undefined when its prefix shows
 * nothing wrong (or is compressed: its bytes say nothing before they are inflated). Walks the top-level fields that
 * lie whole in the chunk: more than MAX_DESCRIPTORS descriptors (field 2) or MAX_FIELDS fields refuses, as the full
 * scan of rlsWire.ts would once the whole message had arrived. No allocation. The answers are printable ASCII
 * without `%`: the grpc-message header carries them as they are (gRPC percent-encodes only other bytes).
 */
export function prefixRefusal(chunk: Uint8Array): string | undefined {
  if (chunk.length < 6 || chunk[0] !== 0) return undefined;
  const end = chunk.length;
  let pos = 5;
  let descriptors = 0;
  let fields = 0;
  while (pos < end) {
    // the tag (a varint): a field number and a wire type
    let tag = 0;
    let shift = 0;
    let b = 0;
    do {
      if (pos >= end || shift > 28) return undefined;
      b = chunk[pos++];
      tag |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (++fields > MAX_FIELDS) return `request: has more than ${MAX_FIELDS} protobuf fields; a RateLimitRequest of at most ${MAX_DESCRIPTORS} descriptors has fewer`;
    const wire = tag & 7;
    if (tag >>> 3 === 2 && wire === 2 && ++descriptors > MAX_DESCRIPTORS) {
      return `descriptors: has more than ${MAX_DESCRIPTORS} descriptors; at most ${MAX_DESCRIPTORS} are accepted in one request`;
    }
    if (wire === 0) {
      while (pos < end && chunk[pos] & 0x80) pos++;
      pos++;
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else if (wire === 2) {
      let len = 0;
      shift = 0;
      do {
        if (pos >= end || shift > 28) return undefined;
        b = chunk[pos++];
        len += (b & 0x7f) * 2 ** shift;
        shift += 7;
      } while (b & 0x80);
      pos += len;
    } else {
      return undefined; // groups or garbage: the full scan names it
    }
  }
  return undefined;
}

/**
 * FirstChunk — refuses a call from its first DATA frame when that alone shows the request is past the bounds (a
 * 4 MB message of 2 M empty descriptors shows it in its first 2 kB): answered INVALID_ARGUMENT at once and its stream
 * reset, so the rest of the message is never buffered (grpc-js keeps every chunk of a message, then joins them:
 * 8 MB held per 4 MB message until the whole has arrived and the full scan refuses it). Messages that pass (every
 * legitimate one) go on to grpc-js and the full scan unchanged.
 */
export class FirstChunk {
  /** refused — calls refused from their first chunk. */
  refused = 0;

  /** add — a new stream, from the HTTP/2 server's 'stream' event. */
  readonly add = (stream: http2.ServerHttp2Stream): void => {
    stream.on('data', this.first);
  };

  /** first — one function for every stream (`this` is the stream): looks at its first chunk only. */
  private readonly first = ((guard: FirstChunk) =>
    function (this: http2.ServerHttp2Stream, chunk: Buffer): void {
      this.removeListener('data', guard.first);
      const why = prefixRefusal(chunk);
      if (why === undefined || this.destroyed || this.closed) return;
      guard.refused++;
      try {
        if (!this.headersSent) {
          this.respond({ ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-status': '3', 'grpc-message': why }, { endStream: true });
        }
      } catch {
        // the session is going away: the reset below is all there is to do
      }
      this.close(http2.constants.NGHTTP2_NO_ERROR);
    })(this);
}
