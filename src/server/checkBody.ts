/**
 * server/checkBody — a POST /v1/check body read straight from its bytes when it has the compact form a client's
 * JSON.stringify writes: `{"policy":"…","key":"…"}`, with an optional `"cost":<integer>`, the members in any order,
 * each once, no whitespace, strings of printable ASCII without escapes. For such a body JSON.parse would give exactly
 * these values, so the answer is the same; anything else (whitespace, escapes, non-ASCII, another member, a repeated
 * one, a fraction, an exponent, a leading zero, a long number) is left to JSON.parse and the general path. It saves
 * the body's toString, JSON.parse's object and its `for … in` walk: about a tenth of the service's own work per
 * /v1/check (docs/server.md, *Speed*).
 */
import { BACKSLASH, BRACE, CLOSE_BRACE, COLON, COMMA, QUOTE } from './jsonBytes.js';
import { asciiText } from './asciiText.js';

/** CheckFields — a check body's members as JSON.parse would give them (`cost` undefined when absent). */
export interface CheckFields {
  policy: string;
  key: string;
  cost: number | undefined;
}

/** MAX_FAST — the longest body read here, in bytes; longer ones go to JSON.parse (and its depth scan first). */
export const MAX_FAST = 1024;

/** MAX_DIGITS — the longest cost read here: 15 digits are exact in a double, as JSON.parse would read them. */
const MAX_DIGITS = 15;


/**
 * fastCheck — the members of `raw` when it is a compact check body (above), else undefined (parse it with
 * JSON.parse). No allocation but the two strings and the result.
 */
export function fastCheck(raw: Buffer): CheckFields | undefined {
  const n = raw.length;
  if (n > MAX_FAST || n < 2 || raw[0] !== BRACE || raw[n - 1] !== CLOSE_BRACE) return undefined;
  let policy: string | undefined;
  let key: string | undefined;
  let cost: number | undefined;
  let pos = 1;
  for (;;) {
    // a member name: "policy", "key" or "cost", then a colon
    if (raw[pos] !== QUOTE) return undefined;
    const member = memberAt(raw, pos + 1);
    if (member === 0) return undefined;
    pos += member === POLICY ? 8 : member === KEY ? 5 : 6;
    if (raw[pos++] !== COLON) return undefined;
    if (member === COST) {
      if (cost !== undefined) return undefined;
      const start = pos;
      let v = 0;
      while (pos < n && raw[pos] >= 0x30 && raw[pos] <= 0x39) v = v * 10 + (raw[pos++] - 0x30);
      const digits = pos - start;
      if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && raw[start] === 0x30)) return undefined;
      cost = v;
    } else {
      if (raw[pos++] !== QUOTE) return undefined;
      const start = pos;
      for (;;) {
        if (pos >= n) return undefined;
        const b = raw[pos];
        if (b === QUOTE) break;
        if (b < 0x20 || b > 0x7e || b === BACKSLASH) return undefined;
        pos++;
      }
      const text = asciiText(raw, start, pos);
      pos++;
      if (member === POLICY) {
        if (policy !== undefined) return undefined;
        policy = text;
      } else {
        if (key !== undefined) return undefined;
        key = text;
      }
    }
    const next = raw[pos++];
    if (next === CLOSE_BRACE) break;
    if (next !== COMMA) return undefined;
  }
  if (pos !== n || policy === undefined || key === undefined) return undefined;
  return { policy, key, cost };
}

/** POLICY, KEY, COST — the members memberAt names (0: none of them). */
const POLICY = 1;
const KEY = 2;
const COST = 3;

/**
 * memberAt — which member name starts at `at` (after its opening quote), closing quote included: `policy"`, `key"`
 * or `cost"`; 0 for any other.
 */
function memberAt(raw: Buffer, at: number): number {
  const c = raw[at];
  if (c === 0x70) {
    // policy"
    return raw[at + 1] === 0x6f && raw[at + 2] === 0x6c && raw[at + 3] === 0x69 && raw[at + 4] === 0x63 && raw[at + 5] === 0x79 && raw[at + 6] === QUOTE ? POLICY : 0;
  }
  if (c === 0x6b) return raw[at + 1] === 0x65 && raw[at + 2] === 0x79 && raw[at + 3] === QUOTE ? KEY : 0; // key"
  if (c === 0x63) return raw[at + 1] === 0x6f && raw[at + 2] === 0x73 && raw[at + 3] === 0x74 && raw[at + 4] === QUOTE ? COST : 0; // cost"
  return 0;
}
