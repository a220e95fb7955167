/**
 * server/rlsBody — a POST /json body read straight from its bytes when it has the compact form a client's
 * JSON.stringify writes for the usual request: `{"domain":"…","descriptors":[{"entries":[{"key":"…","value":"…"},…]},…]}`
 * — those members only, in that order, each once, no whitespace, strings of printable ASCII without escapes, at least
 * one descriptor, at most MAX_DESCRIPTORS descriptors of at most MAX_ENTRIES entries. For such a body, JSON.parse then
 * requestFromJson (rls.ts) would give exactly the request returned here (hits_addend 0), so the answer is the same;
 * anything else (whitespace, escapes, non-ASCII, hitsAddend, a limit, another member, an empty list) is left to them.
 * It saves the body's toString, JSON.parse's intermediate objects and requestFromJson's walk over them: about a
 * quarter of the service's own work per /json call (docs/server.md, *Speed*).
 */
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COMMA, QUOTE } from './jsonBytes.js';
import { MAX_DESCRIPTORS, MAX_ENTRIES } from './envoy.js';
import type { RlsDescriptor, RlsEntry, RlsRequest } from './rls.js';
import { asciiText } from './asciiText.js';

/** MAX_FAST — the longest body read here, in bytes; longer ones go to JSON.parse (and its depth scan first). */
export const MAX_FAST = 4096;


/** Literals — the fixed bytes of the compact form, as Buffers to compare against. */
const HEAD = Buffer.from('{"domain":"');
const DESCRIPTORS = Buffer.from(',"descriptors":[');
const ENTRIES = Buffer.from('{"entries":[');
const KEY = Buffer.from('{"key":"');
const VALUE = Buffer.from(',"value":"');

/** literal — the position after `lit` when its bytes come at `at` in `raw`, else -1. */
function literal(raw: Buffer, at: number, lit: Buffer): number {
  const n = lit.length;
  if (at < 0 || at + n > raw.length) return -1;
  for (let i = 0; i < n; i++) if (raw[at + i] !== lit[i]) return -1;
  return at + n;
}

/**
 * quoteAt — the position of the quote that closes a string starting at `start`, or -1 when a character before it is not
 * plain printable ASCII (or the body ends first).
 */
function quoteAt(raw: Buffer, start: number): number {
  if (start < 0) return -1;
  const n = raw.length;
  for (let pos = start; pos < n; pos++) {
    const b = raw[pos];
    if (b === QUOTE) return pos;
    if (b < 0x20 || b > 0x7e || b === BACKSLASH) return -1;
  }
  return -1;
}

/**
 * text — the ASCII bytes `start` to `end` as a string. The same short texts come in every request (the domain, the
 * entries' keys): the last one read at each `slot` is kept and given back when its bytes are the same, instead of a new
 * string each time.
 */
function text(raw: Buffer, start: number, end: number, slot: number): string {
  const last = LAST[slot];
  const n = end - start;
  if (last.length === n) {
    let i = 0;
    while (i < n && raw[start + i] === last.charCodeAt(i)) i++;
    if (i === n) return last;
  }
  const s = asciiText(raw, start, end);
  if (n <= 32) LAST[slot] = s;
  return s;
}

/** LAST — the last domain (slot 0) and entry keys (slot 1 + the entry's place in its descriptor) read. */
const LAST: string[] = new Array<string>(2 + MAX_ENTRIES).fill('');
const DOMAIN_SLOT = 0;

/**
 * fastRls — the request `raw` spells when it is a compact /json body (above), else undefined (parse it with
 * JSON.parse and requestFromJson).
 */
export function fastRls(raw: Buffer): RlsRequest | undefined {
  if (raw.length > MAX_FAST) return undefined;
  let pos = literal(raw, 0, HEAD);
  let q = quoteAt(raw, pos);
  if (q < 0) return undefined;
  const domain = text(raw, pos, q, DOMAIN_SLOT);
  pos = literal(raw, q + 1, DESCRIPTORS);
  if (pos < 0) return undefined;
  // the descriptors and each one's entries are gathered in the scratch lists, then copied into arrays of their exact
  // length (`[]` and push would give each a backing store of 17 slots on its first push: ~150 bytes of garbage each)
  let nd = 0;
  for (;;) {
    pos = literal(raw, pos, ENTRIES);
    if (pos < 0) return undefined;
    let ne = 0;
    for (;;) {
      pos = literal(raw, pos, KEY);
      q = quoteAt(raw, pos);
      if (q < 0) return undefined;
      const key = text(raw, pos, q, 1 + ne);
      pos = literal(raw, q + 1, VALUE);
      q = quoteAt(raw, pos);
      if (q < 0) return undefined;
      const value = asciiText(raw, pos, q);
      pos = q + 1;
      if (raw[pos++] !== CLOSE_BRACE) return undefined; // }
      ENTRY_SCRATCH[ne++] = { key, value };
      const next = raw[pos++];
      if (next === CLOSE_BRACKET) break; // ]
      if (next !== COMMA || ne >= MAX_ENTRIES) return undefined; // ,
    }
    if (raw[pos++] !== CLOSE_BRACE) return undefined; // } of the descriptor
    DESCRIPTOR_SCRATCH[nd++] = { entries: exactly(ENTRY_SCRATCH, ne) };
    const next = raw[pos++];
    if (next === CLOSE_BRACKET) break; // ]
    if (next !== COMMA || nd >= MAX_DESCRIPTORS) return undefined; // ,
  }
  if (raw[pos++] !== CLOSE_BRACE || pos !== raw.length) return undefined; // } of the request, and nothing after it
  return { domain, descriptors: exactly(DESCRIPTOR_SCRATCH, nd), hits_addend: 0 };
}

/**
 * ENTRY_SCRATCH, DESCRIPTOR_SCRATCH — where fastRls gathers a descriptor's entries and the request's descriptors
 * (at most MAX_ENTRIES and MAX_DESCRIPTORS) before copying them out; what they still hold after a call is never read.
 */
const ENTRY_SCRATCH: RlsEntry[] = [];
const DESCRIPTOR_SCRATCH: RlsDescriptor[] = [];

/** exactly — the first `n` (>= 1) items of `from` as a new array of that length: one or two by a literal. */
function exactly<T>(from: T[], n: number): T[] {
  return n === 1 ? [from[0]] : n === 2 ? [from[0], from[1]] : from.slice(0, n);
}
