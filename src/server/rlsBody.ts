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
import { MAX_DESCRIPTORS, MAX_ENTRIES } from './envoy.js';
import type { RlsDescriptor, RlsEntry, RlsRequest } from './rls.js';

/** MAX_FAST — the longest body read here, in bytes; longer ones go to JSON.parse (and its depth scan first). */
export const MAX_FAST = 4096;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Latin1 — Buffer's latin1Slice (node's own, not in @types/node): ASCII bytes as a one-byte string, no decoding. */
interface Latin1 {
  latin1Slice(start: number, end: number): string;
}

/** Literals — the fixed bytes of the compact form, as Buffers to compare against. */
const HEAD = Buffer.from('{"domain":"');
const DESCRIPTORS = Buffer.from(',"descriptors":[');
const ENTRIES = Buffer.from('{"entries":[');
const KEY = Buffer.from('{"key":"');
const VALUE = Buffer.from(',"value":"');

/**
 * Reader — one pass over a body: `pos` the next byte to read; `fail` set once the body left the compact form.
 */
class Reader {
  pos = 0;
  constructor(readonly raw: Buffer) {}

  /** literal — whether `lit`'s bytes come next (then skipped). */
  literal(lit: Buffer): boolean {
    const raw = this.raw;
    const at = this.pos;
    if (at + lit.length > raw.length) return false;
    for (let i = 0; i < lit.length; i++) if (raw[at + i] !== lit[i]) return false;
    this.pos = at + lit.length;
    return true;
  }

  /** text — a string's characters up to its closing quote (skipped), or undefined when one is not plain ASCII. */
  text(): string | undefined {
    const raw = this.raw;
    const start = this.pos;
    let pos = start;
    for (;;) {
      if (pos >= raw.length) return undefined;
      const b = raw[pos];
      if (b === QUOTE) break;
      if (b < 0x20 || b > 0x7e || b === BACKSLASH) return undefined;
      pos++;
    }
    this.pos = pos + 1;
    return (raw as unknown as Latin1).latin1Slice(start, pos);
  }

  /** byte — the next byte (skipped), or undefined at the end. */
  byte(): number | undefined {
    return this.raw[this.pos++];
  }
}

/**
 * fastRls — the request `raw` spells when it is a compact /json body (above), else undefined (parse it with
 * JSON.parse and requestFromJson).
 */
export function fastRls(raw: Buffer): RlsRequest | undefined {
  if (raw.length > MAX_FAST) return undefined;
  const r = new Reader(raw);
  if (!r.literal(HEAD)) return undefined;
  const domain = r.text();
  if (domain === undefined || !r.literal(DESCRIPTORS)) return undefined;
  const descriptors: RlsDescriptor[] = [];
  for (;;) {
    if (!r.literal(ENTRIES)) return undefined;
    const entries: RlsEntry[] = [];
    for (;;) {
      if (!r.literal(KEY)) return undefined;
      const key = r.text();
      if (key === undefined || !r.literal(VALUE)) return undefined;
      const value = r.text();
      if (value === undefined || r.byte() !== 0x7d) return undefined; // }
      entries.push({ key, value });
      const next = r.byte();
      if (next === 0x5d) break; // ]
      if (next !== 0x2c || entries.length >= MAX_ENTRIES) return undefined; // ,
    }
    if (r.byte() !== 0x7d) return undefined; // } of the descriptor
    descriptors.push({ entries });
    const next = r.byte();
    if (next === 0x5d) break; // ]
    if (next !== 0x2c || descriptors.length >= MAX_DESCRIPTORS) return undefined; // ,
  }
  if (r.byte() !== 0x7d || r.pos !== raw.length) return undefined; // } of the request, and nothing after it
  return { domain, descriptors, hits_addend: 0 };
}
