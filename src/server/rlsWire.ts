/**
 * rlsWire — a scan of a RateLimitRequest's protobuf bytes before anything decodes them. Decoding is the expensive
 * part of a hostile message: protobufjs makes an object per descriptor and per entry, so 4 MB of empty descriptors
 * (2.1 M of them, or 4 114 bytes gzip-compressed: grpc-js inflates up to the receive limit) held the event loop for
 * 1–2 s and took RSS to ~900 MB before the service could count them. The scan walks the wire format of the fields
 * proto/rls.proto declares, allocates nothing on the common path, and refuses as soon as a bound is passed:
 * - more than MAX_DESCRIPTORS descriptors (`descriptors`), more than MAX_ENTRIES entries in one (`descriptors[i].entries`);
 * - more than MAX_FIELDS fields in the whole message (a field repeated where the proto has it once, or fields the
 *   proto does not declare, still cost the decoder a step each);
 * - a domain, entry key or entry value that is not valid UTF-8 (`descriptors[i].entries[j].value`): protobufjs would
 *   decode every invalid sequence to U+FFFD, so distinct byte strings would share one client's counter. Envoy sends
 *   header values and strings that are valid UTF-8; refusing is cheaper and plainer than carrying bytes through;
 * - bytes that are not protobuf (a truncated field, a group, a known field with another wire type) — `request`.
 * A message that passes is then decoded by protobufjs as before. Field numbers (proto/rls.proto):
 * RateLimitRequest { domain = 1; descriptors = 2; hits_addend = 3 },
 * RateLimitDescriptor { entries = 1; limit = 2; hits_addend = 3 }, Entry { key = 1; value = 2 }.
 */

import { isUtf8 } from 'node:buffer';
import { BadRequest } from './rls.js';
import { MAX_DESCRIPTORS, MAX_ENTRIES } from './envoy.js';

/**
 * MAX_FIELDS — the most protobuf fields (tags, at every depth) one request may have: room for MAX_DESCRIPTORS
 * descriptors of 8 entries each with their own limit and hits_addend (a legitimate request has far fewer).
 * Bounds the decoder's steps whatever the fields are.
 */
export const MAX_FIELDS = MAX_DESCRIPTORS * (8 * 3 + 3 + 4) + 16;

const EMPTY = new Uint8Array(0);
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/** Refusal — a scan's verdict; thrown inside the scan, returned as a BadRequest by {@link scanRequest}. */
class Refusal {
  constructor(readonly field: string, readonly message: string) {}
}

/**
 * Scanner — the walk's position over one message. `fields` counts tags at every depth. One instance serves every
 * call (a scan is synchronous, so never re-entered): nothing is allocated for a message that passes.
 */
class Scanner {
  pos = 0;
  fields = 0;
  buf: Uint8Array = EMPTY;

  reset(buf: Uint8Array): this {
    this.buf = buf;
    this.pos = 0;
    this.fields = 0;
    return this;
  }

  malformed(why: string): Refusal {
    return new Refusal('request', `is not a RateLimitRequest in protobuf: ${why}`);
  }

  /** tag — the next field's tag (a varint of at most 5 bytes, as protobufjs reads uint32), counted. */
  tag(end: number): number {
    if (++this.fields > MAX_FIELDS) throw new Refusal('request', `has more than ${MAX_FIELDS} protobuf fields; a RateLimitRequest of at most ${MAX_DESCRIPTORS} descriptors of ${MAX_ENTRIES} entries has fewer`);
    const t = this.uint32(end);
    if (t >>> 3 === 0) throw this.malformed(`field number 0 at byte ${this.pos}`);
    return t;
  }

  /** uint32 — a varint read as protobufjs reads a uint32 (up to 10 bytes; the low 32 bits). */
  uint32(end: number): number {
    const b = this.buf;
    let v = 0;
    for (let shift = 0, i = 0; i < 10; i++, shift += 7) {
      if (this.pos >= end) throw this.malformed(`a varint runs past the end at byte ${this.pos}`);
      const x = b[this.pos++];
      if (shift < 32) v |= (x & 0x7f) << shift;
      if (x < 0x80) return v >>> 0;
    }
    throw this.malformed(`a varint longer than 10 bytes at byte ${this.pos}`);
  }

  /** len — a length-delimited field's length; returns where it ends. */
  len(end: number): number {
    const n = this.uint32(end);
    const stop = this.pos + n;
    if (stop > end) throw this.malformed(`a field of ${n} bytes at byte ${this.pos} runs past the end of its message`);
    return stop;
  }

  /** skip — the value of a field this scan does not look into. */
  skip(wire: number, end: number): void {
    switch (wire) {
      case VARINT: this.uint32(end); return;
      case I64: this.pos += 8; break;
      case LEN: this.pos = this.len(end); return;
      case I32: this.pos += 4; break;
      default: throw this.malformed(`wire type ${wire} at byte ${this.pos} (groups and unknown types are not in RLS)`);
    }
    if (this.pos > end) throw this.malformed(`a fixed-size field runs past the end at byte ${this.pos}`);
  }

  /** expect — the wire type a declared field must have. */
  expect(wire: number, want: number, field: string): void {
    if (wire !== want) throw this.malformed(`${field} has wire type ${wire}, the proto declares ${want}`);
  }

  /**
   * utf8 — the string in [pos, stop) must be valid UTF-8; an ASCII string is checked without leaving the loop (and
   * without allocating). The field is named only when refused: the domain (i < 0), else descriptors[i].entries[j]'s
   * key or value.
   */
  utf8(stop: number, i: number, j: number, value: boolean): void {
    const b = this.buf;
    for (let k = this.pos; k < stop; k++) {
      if (b[k] >= 0x80) {
        if (!isUtf8(b.subarray(k, stop))) {
          const field = i < 0 ? 'domain' : `descriptors[${i}].entries[${j}].${value ? 'value' : 'key'}`;
          throw new Refusal(field, 'is not valid UTF-8 (distinct byte strings would share one counter)');
        }
        break;
      }
    }
    this.pos = stop;
  }

  request(): void {
    const end = this.buf.length;
    let descriptors = 0;
    while (this.pos < end) {
      const t = this.tag(end);
      const no = t >>> 3;
      const wire = t & 7;
      if (no === 1) {
        this.expect(wire, LEN, 'domain');
        this.utf8(this.len(end), -1, 0, false);
      } else if (no === 2) {
        this.expect(wire, LEN, 'descriptors');
        if (descriptors === MAX_DESCRIPTORS) throw new Refusal('descriptors', `has more than ${MAX_DESCRIPTORS} descriptors; at most ${MAX_DESCRIPTORS} are accepted in one request`);
        this.descriptor(this.len(end), descriptors++);
      } else {
        this.skip(wire, end);
      }
    }
  }

  descriptor(end: number, i: number): void {
    let entries = 0;
    while (this.pos < end) {
      const t = this.tag(end);
      if (t >>> 3 === 1) {
        if ((t & 7) !== LEN) this.expect(t & 7, LEN, `descriptors[${i}].entries`);
        if (entries === MAX_ENTRIES) throw new Refusal(`descriptors[${i}].entries`, `has more than ${MAX_ENTRIES} entries; at most ${MAX_ENTRIES} are accepted in one descriptor`);
        this.entry(this.len(end), i, entries++);
      } else {
        // limit (2) and hits_addend (3) are small messages protobufjs checks itself; others are skipped
        this.skip(t & 7, end);
      }
    }
  }

  entry(end: number, i: number, j: number): void {
    while (this.pos < end) {
      const t = this.tag(end);
      const no = t >>> 3;
      if (no === 1 || no === 2) {
        if ((t & 7) !== LEN) this.expect(t & 7, LEN, `descriptors[${i}].entries[${j}].${no === 1 ? 'key' : 'value'}`);
        this.utf8(this.len(end), i, j, no === 2);
      } else {
        this.skip(t & 7, end);
      }
    }
  }
}

const SCANNER = new Scanner();

/**
 * scanRequest — undefined when `bytes` may be decoded as a RateLimitRequest, else the BadRequest to answer (the
 * field named): see the module comment. Linear in the bytes it walks, and it stops at the first bound passed.
 */
export function scanRequest(bytes: Uint8Array): BadRequest | undefined {
  try {
    SCANNER.reset(bytes).request();
    return undefined;
  } catch (e) {
    if (e instanceof Refusal) return new BadRequest(e.field, e.message);
    throw e;
  } finally {
    SCANNER.buf = EMPTY; // the message is not kept alive by the scanner
  }
}
