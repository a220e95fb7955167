/**
 * server/jsonBytes — the bytes of JSON's punctuation, for the readers that look at a body's bytes before (or instead
 * of) JSON.parse: jsonScan.ts (the bounds scan), checkBody.ts and rlsBody.ts (the compact bodies' fast paths).
 */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COLON = 0x3a;
export const COMMA = 0x2c;
export const BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
