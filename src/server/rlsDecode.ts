/**
 * server/rlsDecode — a RateLimitRequest read straight from its protobuf bytes when it has the usual form (what
 * Envoy sends): a domain, then descriptors of key/value entries and nothing else — each field once, in the proto's
 * order (domain = 1, descriptors = 2; Entry { key = 1, value = 2 }, both present), strings of printable ASCII, at
 * least one descriptor of at least one entry, at most MAX_DESCRIPTORS descriptors of at most MAX_ENTRIES entries.
 * For such bytes protobufjs (proto-loader's deserializer, LOADER_OPTIONS) gives exactly the object returned here, and
 * the wire scan (rlsWire.ts) would pass them: so neither runs. Anything else — a hits_addend, a descriptor's limit or
 * hits_addend, an unknown or repeated field, another order, an empty descriptor, a missing key or value, a byte past
 * ASCII, a truncated field, more fields than the scan's MAX_FIELDS — is left to the scan and protobufjs, unchanged. It saves protobufjs's decode and its
 * toObject copy (~0.7 µs a call, against ~0.15 here) and the scan's walk. Field numbers: proto/rls.proto.
 */
import { MAX_DESCRIPTORS, MAX_ENTRIES } from './envoy.js';
import { MAX_FIELDS } from './rlsWire.js';
import type { RlsDescriptor, RlsEntry, RlsRequest } from './rls.js';
import { asciiText } from './asciiText.js';

/** TAG_1, TAG_2 — field 1 and field 2, length-delimited (wire type 2): the only tags of the usual form. */
const TAG_1 = 0x0a;
const TAG_2 = 0x12;

/**
 * Reader — the walk's position over one message; `end` where the message being read ends. One instance serves every
 * call (a decode is synchronous, never re-entered): nothing is allocated but the request's own objects.
 */
class Reader {
  buf: Buffer = EMPTY;
  pos = 0;

  /** len — a length-delimited field's length (a varint of at most 5 bytes) and so where it ends, or -1 when it runs past `end`. */
  len(end: number): number {
    const b = this.buf;
    let n = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= end) return -1;
      const x = b[this.pos++];
      n += (x & 0x7f) * 2 ** shift;
      if (x < 0x80) {
        const stop = this.pos + n;
        return stop <= end ? stop : -1;
      }
    }
    return -1;
  }

  /**
   * ascii — whether [pos, stop) is printable ASCII. Anything else (UTF-8 past ASCII, control bytes) goes to the scan,
   * which checks UTF-8, and to protobufjs, which decodes it.
   */
  ascii(stop: number): boolean {
    const b = this.buf;
    for (let k = this.pos; k < stop; k++) if (b[k] < 0x20 || b[k] > 0x7e) return false;
    return true;
  }
}

const EMPTY = Buffer.alloc(0);
const READER = new Reader();

/**
 * text — the ASCII bytes `start` to `end` as a string. The domain and the entries' keys come in every call the same:
 * the last one read at each `slot` is given back when its bytes are the same, instead of a new string each time.
 */
function text(buf: Buffer, start: number, end: number, slot: number): string {
  const last = LAST[slot];
  const n = end - start;
  if (last.length === n) {
    let i = 0;
    while (i < n && buf[start + i] === last.charCodeAt(i)) i++;
    if (i === n) return last;
  }
  const s = asciiText(buf, start, end);
  if (n <= 32) LAST[slot] = s;
  return s;
}

/** LAST — the last domain (slot 0) and entry keys (slot 1 + the entry's place in its descriptor) read. */
const LAST: string[] = new Array<string>(1 + MAX_ENTRIES).fill('');

/**
 * fastRequest — the request `bytes` spell when they have the usual form (above), as protobufjs would decode it; else
 * undefined (scan them, then decode them with protobufjs).
 */
export function fastRequest(bytes: Buffer): RlsRequest | undefined {
  const r = READER;
  r.buf = bytes;
  r.pos = 0;
  try {
    return read(r, bytes);
  } finally {
    r.buf = EMPTY; // the message is not kept alive by the reader
  }
}

function read(r: Reader, b: Buffer): RlsRequest | undefined {
  const end = b.length;
  if (end === 0 || b[0] !== TAG_1) return undefined;
  r.pos = 1;
  let stop = r.len(end);
  if (stop < 0 || !r.ascii(stop)) return undefined;
  const domain = text(b, r.pos, stop, 0);
  r.pos = stop;
  const descriptors: RlsDescriptor[] = [];
  // the fields, counted as the scan counts them (a tag each, at every depth): past MAX_FIELDS it refuses the request
  let fields = 1;
  while (r.pos < end) {
    if (b[r.pos++] !== TAG_2 || descriptors.length === MAX_DESCRIPTORS || ++fields > MAX_FIELDS) return undefined;
    const dEnd = r.len(end);
    if (dEnd < 0 || r.pos === dEnd) return undefined;
    const entries: RlsEntry[] = [];
    while (r.pos < dEnd) {
      if (b[r.pos++] !== TAG_1 || entries.length === MAX_ENTRIES || (fields += 3) > MAX_FIELDS) return undefined;
      const eEnd = r.len(dEnd);
      if (eEnd < 0 || r.pos >= eEnd || b[r.pos++] !== TAG_1) return undefined;
      stop = r.len(eEnd);
      if (stop < 0 || !r.ascii(stop)) return undefined;
      const key = text(b, r.pos, stop, 1 + entries.length);
      r.pos = stop;
      if (r.pos >= eEnd || b[r.pos++] !== TAG_2) return undefined;
      stop = r.len(eEnd);
      if (stop !== eEnd || !r.ascii(stop)) return undefined;
      const value = asciiText(b, r.pos, stop);
      r.pos = stop;
      entries.push({ key, value });
    }
    descriptors.push({ entries });
  }
  if (descriptors.length === 0) return undefined;
  return { domain, descriptors };
}
