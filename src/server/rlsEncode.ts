/**
 * rlsEncode — a RateLimitResponse's protobuf bytes, written straight from the service's plain object: the bytes
 * protobufjs writes for it (through proto-loader: fromObject, then encode — every field present on the object is
 * written, a zero too; fields in field-number order), in one pass to size and one to write, without protobufjs's
 * message objects and writer operations (~1.5 µs a response, as much as a decision). A test holds the two to the same
 * bytes (test/server/speed.test.ts). Field numbers (proto/rls.proto): RateLimitResponse { overall_code = 1;
 * statuses = 2; response_headers_to_add = 3; request_headers_to_add = 4 }, DescriptorStatus { code = 1;
 * current_limit = 2; limit_remaining = 3; duration_until_reset = 4 }, RateLimit { requests_per_unit = 1; unit = 2;
 * name = 3 }, HeaderValue { key = 1; value = 2 }, google.protobuf.Duration { seconds = 1; nanos = 2 }.
 */

import type { RlsHeader, RlsResponse, RlsStatus } from './rls.js';
import { CODE_NUMBER as CODES, MAX_UINT32, UNIT_NUMBER as UNITS } from './envoy.js';


/** varintSize — bytes of `v` (an integer from 0 to 2^53) as a varint. */
function varintSize(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Writer — the position in the response's buffer. */
class Writer {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  varint(v: number): void {
    const b = this.buf;
    while (v >= 128) {
      b[this.pos++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    b[this.pos++] = v;
  }

  string(tag: number, s: string, bytes: number): void {
    this.buf[this.pos++] = tag;
    this.varint(bytes);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }
}

/** canEncode — whether `r` holds only what the encoder below writes as protobufjs would (else protobufjs encodes it). */
export function canEncode(r: RlsResponse): boolean {
  if (CODES[r.overall_code] === undefined || !Array.isArray(r.statuses) || !Array.isArray(r.response_headers_to_add)) return false;
  if ((r as { request_headers_to_add?: unknown }).request_headers_to_add !== undefined) return false;
  for (const h of r.response_headers_to_add) if (typeof h.key !== 'string' || typeof h.value !== 'string') return false;
  for (const s of r.statuses) {
    if (s === undefined || CODES[s.code] === undefined || !uint32(s.limit_remaining)) return false;
    const l = s.current_limit;
    if (l !== undefined && (!uint32(l.requests_per_unit) || UNITS[l.unit] === undefined || (l.name !== undefined && typeof l.name !== 'string'))) return false;
    const d = s.duration_until_reset;
    if (d !== undefined && (!Number.isSafeInteger(d.seconds) || d.seconds < 0 || !uint32(d.nanos) || d.nanos > 0x7fffffff)) return false;
  }
  return true;
}

function uint32(v: number): boolean {
  return Number.isInteger(v) && v >= 0 && v <= MAX_UINT32;
}

/** limitSize — the size of a status's RateLimit body (its name `nameBytes` long in UTF-8). */
function limitSize(s: RlsStatus, nameBytes: number): number {
  const l = s.current_limit!;
  let n = 1 + varintSize(l.requests_per_unit) + 1 + varintSize(UNITS[l.unit]);
  if (l.name !== undefined) n += 1 + varintSize(nameBytes) + nameBytes;
  return n;
}

function durationSize(d: { seconds: number; nanos: number }): number {
  return 1 + varintSize(d.seconds) + 1 + varintSize(d.nanos);
}

function headerSize(h: RlsHeader): number {
  const k = Buffer.byteLength(h.key);
  const v = Buffer.byteLength(h.value);
  return 1 + varintSize(k) + k + 1 + varintSize(v) + v;
}

/**
 * encodeResponse — RateLimitResponse's bytes for `r` (see the module comment); call only when {@link canEncode}.
 * `name` of a current_limit and the headers are the only strings: their UTF-8 lengths are measured once each.
 */
export function encodeResponse(r: RlsResponse): Buffer {
  const statuses = r.statuses;
  const n = statuses.length;
  // per status: its body's size, its RateLimit's body size and name's bytes
  const sizes = new Array<number>(n * 3);
  let total = 1 + varintSize(CODES[r.overall_code]);
  for (let i = 0; i < n; i++) {
    const s = statuses[i];
    let body = 1 + varintSize(CODES[s.code]) + 1 + varintSize(s.limit_remaining);
    let limit = 0;
    let nameBytes = 0;
    if (s.current_limit !== undefined) {
      if (s.current_limit.name !== undefined) nameBytes = Buffer.byteLength(s.current_limit.name);
      limit = limitSize(s, nameBytes);
      body += 1 + varintSize(limit) + limit;
    }
    if (s.duration_until_reset !== undefined) {
      const d = durationSize(s.duration_until_reset);
      body += 1 + varintSize(d) + d;
    }
    sizes[i * 3] = body;
    sizes[i * 3 + 1] = limit;
    sizes[i * 3 + 2] = nameBytes;
    total += 1 + varintSize(body) + body;
  }
  const headers = r.response_headers_to_add;
  for (const h of headers) {
    const hs = headerSize(h);
    total += 1 + varintSize(hs) + hs;
  }
  const w = new Writer(Buffer.allocUnsafe(total));
  w.buf[w.pos++] = 0x08; // overall_code
  w.varint(CODES[r.overall_code]);
  for (let i = 0; i < n; i++) {
    const s = statuses[i];
    w.buf[w.pos++] = 0x12; // statuses
    w.varint(sizes[i * 3]);
    w.buf[w.pos++] = 0x08; // code
    w.varint(CODES[s.code]);
    const l = s.current_limit;
    if (l !== undefined) {
      w.buf[w.pos++] = 0x12; // current_limit
      w.varint(sizes[i * 3 + 1]);
      w.buf[w.pos++] = 0x08; // requests_per_unit
      w.varint(l.requests_per_unit);
      w.buf[w.pos++] = 0x10; // unit
      w.varint(UNITS[l.unit]);
      if (l.name !== undefined) w.string(0x1a, l.name, sizes[i * 3 + 2]); // name
    }
    w.buf[w.pos++] = 0x18; // limit_remaining
    w.varint(s.limit_remaining);
    const d = s.duration_until_reset;
    if (d !== undefined) {
      w.buf[w.pos++] = 0x22; // duration_until_reset
      w.varint(durationSize(d));
      w.buf[w.pos++] = 0x08; // seconds
      w.varint(d.seconds);
      w.buf[w.pos++] = 0x10; // nanos
      w.varint(d.nanos);
    }
  }
  for (const h of headers) {
    w.buf[w.pos++] = 0x1a; // response_headers_to_add
    w.varint(headerSize(h));
    w.string(0x0a, h.key, Buffer.byteLength(h.key));
    w.string(0x12, h.value, Buffer.byteLength(h.value));
  }
  return w.buf;
}
