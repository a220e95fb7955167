/**
 * server/asciiText — a short run of ASCII bytes as a string, for the readers that take a request's strings straight
 * from its bytes (checkBody.ts, rlsBody.ts, rlsDecode.ts). Buffer's latin1Slice is a call into node's C++ (~40 ns
 * whatever the length); String.fromCharCode of up to 8 bytes stays in JavaScript (~10 ns). The same string either way.
 */

/** Latin1 — Buffer's latin1Slice (node's own, not in @types/node): ASCII bytes as a one-byte string, no decoding. */
interface Latin1 {
  latin1Slice(start: number, end: number): string;
}

/** asciiText — the bytes `start` to `end` of `b` (ASCII: each byte one character) as a string. */
export function asciiText(b: Uint8Array, start: number, end: number): string {
  const s = start;
  switch (end - start) {
    case 0: return '';
    case 1: return String.fromCharCode(b[s]);
    case 2: return String.fromCharCode(b[s], b[s + 1]);
    case 3: return String.fromCharCode(b[s], b[s + 1], b[s + 2]);
    case 4: return String.fromCharCode(b[s], b[s + 1], b[s + 2], b[s + 3]);
    case 5: return String.fromCharCode(b[s], b[s + 1], b[s + 2], b[s + 3], b[s + 4]);
    case 6: return String.fromCharCode(b[s], b[s + 1], b[s + 2], b[s + 3], b[s + 4], b[s + 5]);
    case 7: return String.fromCharCode(b[s], b[s + 1], b[s + 2], b[s + 3], b[s + 4], b[s + 5], b[s + 6]);
    case 8: return String.fromCharCode(b[s], b[s + 1], b[s + 2], b[s + 3], b[s + 4], b[s + 5], b[s + 6], b[s + 7]);
    default: return (b as unknown as Latin1).latin1Slice(start, end);
  }
}
