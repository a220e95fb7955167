/**
 * server/rlsDecode — a RateLimitRequest's protobuf bytes read straight into the request object when they have the
 * usual form Envoy sends: a domain and descriptors of key/value entries, nothing else — each of those fields with
 * its one-byte tag and wire type 2, the domain and each entry's key and value at most once, every string ASCII. For such bytes protobufjs (through proto-loader, LOADER_OPTIONS in grpc.ts: plain objects, a field absent
 * when it is not on the wire, a field on the wire present even when empty) gives exactly the object returned here;
 * anything else (hits_addend, a descriptor's limit or hits_addend, a field the proto does not declare, a repeated
 * domain or entry key, a string that is not ASCII, a longer tag) is left to protobufjs. Called once the scan (rlsWire.ts) has
 * passed the bytes. It saves protobufjs's message objects, their toObject copies and its UTF-8 decoder: ~0.45 µs of
 * the ~0.6 µs a request's decode took (docs/server.md, *Speed*). A property test holds it to protobufjs
 * (test/server/rls-decode.test.ts). Field numbers (proto/rls.proto): RateLimitRequest { domain = 1;
 * descriptors = 2 }, RateLimitDescriptor { entries = 1 }, Entry { key = 1; value = 2 }.
 */
import { MAX_DESCRIPTORS, MAX_ENTRIES } from './envoy.js';
import type { RlsDescriptor, RlsEntry, RlsRequest } from './rls.js';

/** Latin1 — Buffer's latin1Slice (node's own, not in @types/node): ASCII bytes as a one-byte string, no decoding. */
interface Latin1 {
  latin1Slice(start: number, end: number): string;
}

/** FIELD_1, FIELD_2 — the tags of fields 1 and 2 with wire type 2 (length-delimited): (number << 3) | 2. */
const FIELD_1 = 0x0a;
const FIELD_2 = 0x12;

/**
 * Reader — the position over one message, and its strings. One instance serves every call (a decode is
 * synchronous, never re-entered). `bad` is set instead of throwing: the caller gives up and protobufjs decodes.
 */
class Reader {
  buf: Buffer = EMPTY;
  pos = 0;
  bad = false;

  /** len — a length varint (at most 5 bytes) at pos; returns where its field ends, or -1 (bad) past `end`. */
  len(end: number): number {
    const b = this.buf;
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= end) break;
      const x = b[this.pos++];
      v += (x & 0x7f) * 2 ** shift;
      if (x < 0x80) {
        const stop = this.pos + v;
        if (stop > end) break;
        return stop;
      }
    }
    this.bad = true;
    return -1;
  }

  /**
   * text — the ASCII bytes from pos to `stop` as a string (pos moves to `stop`); '' and bad otherwise. The
   * same short texts come in every request (the domain, the entries' keys): the last one read at each `slot` is given
   * back when its bytes are the same, instead of a new string.
   */
  text(stop: number, slot: number): string {
    const b = this.buf;
    const start = this.pos;
    for (let k = start; k < stop; k++) {
      const c = b[k];
      if (c >= 0x80) {
        this.bad = true;
        return '';
      }
    }
    this.pos = stop;
    const n = stop - start;
    if (slot >= 0) {
      const last = LAST[slot];
      if (last.length === n) {
        let i = 0;
        while (i < n && b[start + i] === last.charCodeAt(i)) i++;
        if (i === n) return last;
      }
    }
    const s = (b as unknown as Latin1).latin1Slice(start, stop);
    if (slot >= 0 && n <= 32) LAST[slot] = s;
    return s;
  }

  request(): RlsRequest | undefined {
    const b = this.buf;
    const end = b.length;
    let domain: string | undefined;
    let descriptors: RlsDescriptor[] | undefined;
    while (this.pos < end) {
      const tag = b[this.pos++];
      if (tag === FIELD_1 && domain === undefined) {
        const stop = this.len(end);
        if (this.bad) return undefined;
        domain = this.text(stop, DOMAIN_SLOT);
      } else if (tag === FIELD_2) {
        const stop = this.len(end);
        if (this.bad) return undefined;
        if (descriptors === undefined) descriptors = [];
        else if (descriptors.length === MAX_DESCRIPTORS) return undefined;
        descriptors.push(this.descriptor(stop));
      } else {
        return undefined;
      }
      if (this.bad) return undefined;
    }
    const out: RlsRequest = {};
    if (domain !== undefined) out.domain = domain;
    if (descriptors !== undefined) out.descriptors = descriptors;
    return out;
  }

  /** descriptor — the entries of a descriptor ending at `end` ({} for none, as protobufjs gives it). */
  descriptor(end: number): RlsDescriptor {
    const b = this.buf;
    let entries: RlsEntry[] | undefined;
    while (this.pos < end) {
      if (b[this.pos++] !== FIELD_1) {
        this.bad = true;
        break;
      }
      const stop = this.len(end);
      if (this.bad) break;
      if (entries === undefined) entries = [];
      else if (entries.length === MAX_ENTRIES) {
        this.bad = true;
        break;
      }
      entries.push(this.entry(stop, entries.length));
      if (this.bad) break;
    }
    return entries === undefined ? {} : { entries };
  }

  /** entry — an entry ending at `end`: its key and value when on the wire (the j-th entry's key kept at slot 1 + j). */
  entry(end: number, j: number): RlsEntry {
    const b = this.buf;
    let key: string | undefined;
    let value: string | undefined;
    while (this.pos < end) {
      const tag = b[this.pos++];
      if (tag === FIELD_1 && key === undefined) {
        const stop = this.len(end);
        if (this.bad) break;
        key = this.text(stop, 1 + j);
      } else if (tag === FIELD_2 && value === undefined) {
        const stop = this.len(end);
        if (this.bad) break;
        value = this.text(stop, -1);
      } else {
        this.bad = true;
        break;
      }
      if (this.bad) break;
    }
    // the members in the order protobufjs's toObject sets them; an absent one is left out, as it leaves it out
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
 * decodeRequest — the RateLimitRequest in `bytes` when they have the usual form (see the file's comment), else
 * undefined (protobufjs decodes them).
 */
export function decodeRequest(bytes: Buffer): RlsRequest | undefined {
  const r = READER;
  r.buf = bytes;
  r.pos = 0;
  r.bad = false;
  try {
    const out = r.request();
    return r.bad ? undefined : out;
  } finally {
    r.buf = EMPTY; // the message is not kept alive by the reader
  }
}
