/**
 * server/rlsDecode — a RateLimitRequest's protobuf bytes read straight into the request object when they have the
 * usual form Envoy sends: a domain and descriptors of key/value entries, nothing else — each of those fields with its
 * one-byte tag and wire type 2, the domain and each entry's key and value at most once, every string ASCII, at most
 * MAX_DESCRIPTORS descriptors of at most MAX_ENTRIES entries and MAX_FIELDS tags in all. For such bytes protobufjs
 * (through proto-loader, LOADER_OPTIONS in grpc.ts: plain objects, a field absent when it is not on the wire, one on
 * the wire present even when empty) gives exactly the object returned here, and the wire scan (rlsWire.ts) passes
 * them: ASCII is UTF-8, and every bound the scan holds is held here. So the listener reads them before the scan and
 * neither the scan nor protobufjs runs. Anything else — hits_addend, a descriptor's limit or hits_addend, a field the
 * proto does not declare, a repeated domain or entry key or value, a string past ASCII, a longer tag, a truncated
 * field, a bound passed — is declined (undefined) and goes to the scan and protobufjs as before. It saves the scan's
 * walk, protobufjs's message objects, their toObject copies and its UTF-8 decoder (docs/server.md, *Speed*). A
 * property test holds it to the scan and protobufjs on random and hostile bytes (test/server/rls-decode.test.ts).
 * Field numbers (proto/rls.proto): RateLimitRequest { domain = 1; descriptors = 2 }, RateLimitDescriptor
 * { entries = 1 }, Entry { key = 1; value = 2 }.
 */
import { MAX_DESCRIPTORS, MAX_ENTRIES } from './envoy.js';
import { MAX_FIELDS } from './rlsWire.js';
import type { RlsDescriptor, RlsEntry, RlsRequest } from './rls.js';
import { asciiText } from './asciiText.js';

/** FIELD_1, FIELD_2 — the tags of fields 1 and 2 with wire type 2 (length-delimited): (number << 3) | 2. */
const FIELD_1 = 0x0a;
const FIELD_2 = 0x12;

/**
 * Reader — the position over one message and the tags counted so far (as the scan counts them: one per field, at
 * every depth). One instance serves every call (a decode is synchronous, never re-entered): nothing is allocated
 * but the request's own objects. Its methods answer -1 or undefined where the form is not the usual one.
 */
class Reader {
  buf: Buffer = EMPTY;
  pos = 0;
  fields = 0;

  /** field — after a tag (counted): its length varint (at most 5 bytes) and so where the field ends; -1 past `end`. */
  field(end: number): number {
    const b = this.buf;
    let v = 0;
    this.fields++;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= end) return -1;
      const x = b[this.pos++];
      v += (x & 0x7f) * 2 ** shift;
      if (x < 0x80) {
        const stop = this.pos + v;
        return stop <= end ? stop : -1;
      }
    }
    return -1;
  }

  /**
   * text — the ASCII bytes from pos to `stop` as a string (pos moves to `stop`), or undefined for a byte past ASCII.
   * The same short texts come in every request (the domain, the entries' keys): the last one read at `slot` (>= 0)
   * is given back when its bytes are the same, instead of a new string.
   */
  text(stop: number, slot: number): string | undefined {
    const b = this.buf;
    const start = this.pos;
    for (let k = start; k < stop; k++) if (b[k] >= 0x80) return undefined;
    this.pos = stop;
    if (slot < 0) return asciiText(b, start, stop);
    const n = stop - start;
    const last = LAST[slot];
    if (last.length === n) {
      let i = 0;
      while (i < n && b[start + i] === last.charCodeAt(i)) i++;
      if (i === n) return last;
    }
    const s = asciiText(b, start, stop);
    if (n <= 32) LAST[slot] = s;
    return s;
  }

  request(): RlsRequest | undefined {
    const b = this.buf;
    const end = b.length;
    let domain: string | undefined;
    let descriptors: RlsDescriptor[] | undefined;
    while (this.pos < end) {
      const tag = b[this.pos++];
      const stop = this.field(end);
      if (stop < 0) return undefined;
      if (tag === FIELD_1 && domain === undefined) {
        domain = this.text(stop, DOMAIN_SLOT);
        if (domain === undefined) return undefined;
      } else if (tag === FIELD_2) {
        // the tags counted as the scan counts them: past MAX_FIELDS it refuses the request (checked per descriptor,
        // so a hostile message is given up within one descriptor of the bound, and at the end)
        if (this.fields > MAX_FIELDS) return undefined;
        if (descriptors === undefined) descriptors = [];
        else if (descriptors.length === MAX_DESCRIPTORS) return undefined;
        const d = this.descriptor(stop);
        if (d === undefined) return undefined;
        descriptors.push(d);
      } else {
        return undefined;
      }
    }
    if (this.fields > MAX_FIELDS) return undefined;
    if (domain !== undefined && descriptors !== undefined) return { domain, descriptors };
    const out: RlsRequest = {};
    if (domain !== undefined) out.domain = domain;
    if (descriptors !== undefined) out.descriptors = descriptors;
    return out;
  }

  /** descriptor — the entries of a descriptor ending at `end` ({} for none, as protobufjs gives it). */
  descriptor(end: number): RlsDescriptor | undefined {
    const b = this.buf;
    if (this.pos === end) return {};
    const entries: RlsEntry[] = [];
    while (this.pos < end) {
      if (b[this.pos++] !== FIELD_1 || entries.length === MAX_ENTRIES) return undefined;
      const stop = this.field(end);
      if (stop < 0) return undefined;
      const e = this.entry(stop, entries.length);
      if (e === undefined) return undefined;
      entries.push(e);
    }
    return { entries };
  }

  /** entry — an entry ending at `end`: its key and value, each when on the wire (the j-th entry's key kept at slot 1 + j). */
  entry(end: number, j: number): RlsEntry | undefined {
    const b = this.buf;
    let key: string | undefined;
    let value: string | undefined;
    while (this.pos < end) {
      const tag = b[this.pos++];
      const stop = this.field(end);
      if (stop < 0) return undefined;
      if (tag === FIELD_1 && key === undefined) {
        key = this.text(stop, 1 + j);
        if (key === undefined) return undefined;
      } else if (tag === FIELD_2 && value === undefined) {
        value = this.text(stop, -1);
        if (value === undefined) return undefined;
      } else {
        return undefined;
      }
    }
    if (key !== undefined && value !== undefined) return { key, value };
    // a member absent from the wire is absent from the object, as protobufjs leaves it out
    const out = {} as RlsEntry;
    if (key !== undefined) out.key = key;
    if (value !== undefined) out.value = value;
    return out;
  }
}

const EMPTY = Buffer.alloc(0);
/** LAST — the last domain (slot 0) and entry keys (slot 1 + the entry's place in its descriptor) read. */
const LAST: string[] = new Array<string>(1 + MAX_ENTRIES).fill('');
const DOMAIN_SLOT = 0;
const READER = new Reader();

/**
 * fastRequest — the RateLimitRequest in `bytes` when they have the usual form (see the file's comment): what
 * protobufjs would decode, bytes the scan would pass. Else undefined: scan them, then decode them with protobufjs.
 */
export function fastRequest(bytes: Buffer): RlsRequest | undefined {
  const r = READER;
  r.buf = bytes;
  r.pos = 0;
  r.fields = 0;
  try {
    return r.request();
  } finally {
    r.buf = EMPTY; // the message is not kept alive by the reader
  }
}
