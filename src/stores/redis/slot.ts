/**
 * slot — Redis Cluster's hash slot of a key: CRC16 (XMODEM: polynomial 0x1021, initial 0) of the key's hash tag (the
 * bytes between the first `{` and the next `}`, when not empty) or of the whole key, modulo 16384. The store uses it
 * to know which node a check waits on (one pending budget per node), for a cluster client only.
 */

/** TABLE — CRC16-XMODEM of every byte value. */
const TABLE = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let crc = i << 8;
  for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  TABLE[i] = crc;
}

/** crc16 — of the UTF-8 bytes of `s` from character `from` to `to` (exclusive). ASCII without a Buffer; else via one. */
function crc16(s: string, from: number, to: number): number {
  let crc = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return crc16Bytes(Buffer.from(s.slice(from, to), 'utf8'));
    crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ c) & 0xff];
  }
  return crc;
}

function crc16Bytes(b: Uint8Array): number {
  let crc = 0;
  for (const byte of b) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

/** tagSlot — the cluster slot of a hash tag (0 … 16383): CRC16 of its UTF-8 bytes. */
export function tagSlot(tag: string): number {
  return crc16(tag, 0, tag.length) & 16383;
}

/** slotOf — the cluster slot of a whole key `key` (0 … 16383): its hash tag's, when it has a non-empty one. */
export function slotOf(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key, open + 1, close) & 16383;
  }
  return crc16(key, 0, key.length) & 16383;
}
