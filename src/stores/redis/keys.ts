/**
 * keys — how a client key becomes part of a Redis key: escaped so that it can be a hash tag (encodeKey, and its
 * inverse decodeKey), and the short tag of a hash slot (slotTag: the index's buckets, listing.ts). The key layout
 * itself (`<prefix>{<encoded key>}:<policy id>`) is RedisBound's.
 */
import { tagSlot } from './slot.js';

/** encodeKey — the client key made safe inside a hash tag, injectively: %, {, } and lone surrogates are %-escaped. */
const UNSAFE = /[%{}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');
export function encodeKey(key: string): string {
  if (!UNSAFE.test(key)) return key;
  return key.replace(UNSAFE_ALL, (c) => (c.length === 1 && c.charCodeAt(0) >= 0xd800 ? `%u${c.charCodeAt(0).toString(16)}` : c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'));
}

/** decodeKey — the inverse of encodeKey. */
export function decodeKey(encoded: string): string {
  if (!encoded.includes('%')) return encoded;
  return encoded.replace(/%u([0-9a-f]{4})|%25|%7B|%7D/g, (m, u: string | undefined) =>
    (u !== undefined ? String.fromCharCode(parseInt(u, 16)) : m === '%25' ? '%' : m === '%7B' ? '{' : '}'));
}

/** slotTags — for every hash slot, a short tag hashing to it (base-36 counting; made once, on first use, ~170 000 CRCs). */
let tags: string[] | undefined;
export function slotTag(slot: number): string {
  if (tags === undefined) {
    const t = new Array<string>(16384);
    let left = 16384;
    for (let i = 0; left > 0; i++) {
      const tag = `i${i.toString(36)}`;
      const s = tagSlot(tag);
      if (t[s] === undefined) {
        t[s] = tag;
        left--;
      }
    }
    tags = t;
  }
  return tags[slot];
}

/** keySlot — the Cluster slot of a hash tag (its UTF-8 bytes). */
export const keySlot = tagSlot;
