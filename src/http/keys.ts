import ipaddr from 'ipaddr.js';
import { RatekeeperError, show } from '../core/errors.js';

/** Address — a parsed address (written as import types, so that the declarations need no default import of ipaddr.js). */
type Address = import('ipaddr.js').IPv4 | import('ipaddr.js').IPv6;

/**
 * ClientKeyOptions — how the default key is derived from a request: the client's IP address, grouped by prefix.
 * Proxy headers are read only when the peer that sent the request is a configured trusted proxy: a client must
 * never be able to choose its own key.
 */
export interface ClientKeyOptions {
  /**
   * trustProxy — the proxies whose forwarding header is believed: addresses or CIDR ranges
   * (`'10.0.0.0/8'`, `'2001:db8::/32'`, `'203.0.113.7'`), the names `'loopback'`, `'private'` (RFC 1918 and
   * fc00::/7), `'linklocal'`, or a function of the peer address. The header is walked from the right (the hop
   * nearest to us) and the first address that is not trusted is the client.
   * @default [] — no proxy is trusted: the key is the socket's peer address, whatever the headers say
   * @example ['loopback', '10.0.0.0/8']
   */
  trustProxy?: readonly string[] | ((address: string) => boolean);
  /**
   * proxyHeader — the one header the trusted proxies write. Only one is read: a proxy that appends to
   * X-Forwarded-For passes a client-written `Forwarded` through untouched, so reading both would let the client
   * choose its key.
   * @default 'x-forwarded-for'
   */
  proxyHeader?: 'x-forwarded-for' | 'forwarded';
  /**
   * ipv6Prefix — IPv6 clients are grouped by this prefix length: one subscriber usually holds a whole /64 and
   * can rotate through it at will. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are treated as IPv4.
   * @default 64
   */
  ipv6Prefix?: number;
  /** ipv4Prefix — IPv4 clients are grouped by this prefix length. @default 32 */
  ipv4Prefix?: number;
}

const NAMED: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
};

/** parseStrict — an address as written by a proxy or the kernel, strictly: dotted quad or IPv6; else undefined. */
function parseStrict(text: string): Address | undefined {
  if (text.indexOf(':') === -1) {
    return ipaddr.IPv4.isValidFourPartDecimal(text) ? ipaddr.IPv4.parse(text) : undefined;
  }
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const a = ipaddr.IPv6.parse(text);
  return a.isIPv4MappedAddress() ? a.toIPv4Address() : a;
}

/**
 * parseHop — one hop of X-Forwarded-For or one `for=` value of Forwarded: an address with an optional port
 * (`1.2.3.4:80`, `[2001:db8::1]:443`, `2001:db8::1`), or undefined for anything else (`unknown`, `_hidden`, junk).
 */
export function parseHop(raw: string): Address | undefined {
  let s = raw.trim();
  if (s.length >= 2 && s.charCodeAt(0) === 34 /* " */ && s.charCodeAt(s.length - 1) === 34) s = s.slice(1, -1).replace(/\\(.)/g, '$1');
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end === -1) return undefined;
    const rest = s.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return parseStrict(s.slice(1, end));
  }
  const colon = s.indexOf(':');
  if (colon !== -1 && colon === s.lastIndexOf(':')) {
    // IPv4 with a port
    if (!/^\d{1,5}$/.test(s.slice(colon + 1))) return undefined;
    s = s.slice(0, colon);
  }
  return parseStrict(s);
}

/**
 * MAX_FORWARDED_LENGTH — the longest `Forwarded` header value read, in UTF-16 units: room for about a hundred hops.
 * A longer one is treated as junk from beyond the trusted chain (the last trusted hop stands for it), so the work a
 * request can cause is bounded whatever it sends.
 */
export const MAX_FORWARDED_LENGTH = 8192;

/**
 * forwardedFor — the `for=` values of a Forwarded header (RFC 7239), in order, nearest hop last. A quoted-string
 * opens only right after `=` and only if it closes: an unclosed or stray quote is an ordinary character, so a client
 * cannot swallow the elements a trusted proxy appends after its own (`Forwarded: for="x` would otherwise hide them).
 * One pass, linear in the length: each character is looked at a bounded number of times (a quote that finds no
 * closing quote proves that none that follows will find one either, so the search runs at most once to the end).
 */
export function forwardedFor(value: string): string[] {
  const out: string[] = [];
  const n = value.length;
  /** unclosed — a search for a closing quote already ran off the end: every later one would too. */
  let unclosed = false;
  let i = 0;
  while (i < n) {
    // one pair (or junk) from i up to the next unquoted `,` or `;`
    let eq = -1; // index of the first `=` in the pair
    let last = -1; // the last non-space character code seen, for "a quote opens right after `=`"
    let j = i;
    for (; j < n; j++) {
      const c = value.charCodeAt(j);
      if (c === 34 /* " */ && last === 61 /* = */ && !unclosed) {
        const close = closingQuote(value, j + 1);
        if (close !== -1) {
          j = close;
          last = 34;
          continue;
        }
        unclosed = true;
      }
      if (c === 44 /* , */ || c === 59 /* ; */) break;
      if (c === 61 && eq === -1) eq = j;
      if (c !== 32 && c !== 9) last = c;
    }
    if (eq !== -1 && value.slice(i, eq).trim().toLowerCase() === 'for') out.push(value.slice(eq + 1, j).trim());
    else if (j < n && value.charCodeAt(j) === 44 && eq === -1 && value.slice(i, j).trim() !== '') out.push(''); // malformed element: an unparseable hop
    i = j + 1;
  }
  return out;
}

/** closingQuote — the index of the quote that closes a quoted-string whose content starts at `from`, or −1. */
function closingQuote(value: string, from: number): number {
  for (let k = from; k < value.length; k++) {
    const c = value.charCodeAt(k);
    if (c === 92 /* \ */) k++;
    else if (c === 34) return k;
  }
  return -1;
}

function prefix(value: unknown, what: string, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new RatekeeperError(`${what} must be an integer from 1 to ${max}, got ${show(value)}`);
  }
  return value;
}

/** Trust — whether a peer or hop address is a trusted proxy. */
type Trust = (a: Address) => boolean;

function trustOf(option: ClientKeyOptions['trustProxy']): Trust | undefined {
  if (option === undefined) return undefined;
  if (typeof option === 'function') return (a) => option(a.toString());
  if (!Array.isArray(option)) throw new RatekeeperError(`trustProxy must be an array of addresses or CIDR ranges, or a function, got ${show(option)}`);
  if (option.length === 0) return undefined;
  const ranges: [Address, number][] = [];
  for (const entry of option as string[]) {
    const list = typeof entry === 'string' && NAMED[entry.toLowerCase()] ? NAMED[entry.toLowerCase()] : [entry];
    for (const e of list) {
      if (typeof e !== 'string') throw new RatekeeperError(`trustProxy entries must be strings, got ${show(e)}`);
      if (ipaddr.isValidCIDR(e)) {
        const [a, bits] = ipaddr.parseCIDR(e);
        // peers are matched as IPv4 when IPv4-mapped, so a mapped range must be matched as the IPv4 range it is
        if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) ranges.push([(a as ipaddr.IPv6).toIPv4Address(), bits - 96]);
        else ranges.push([a, bits]);
      } else {
        const a = parseStrict(e);
        if (!a) throw new RatekeeperError(`trustProxy entry ${show(e)} is not an address, a CIDR range, 'loopback', 'private' or 'linklocal'`);
        ranges.push([a, a.kind() === 'ipv4' ? 32 : 128]);
      }
    }
  }
  return (a) => {
    for (const [r, bits] of ranges) if (r.kind() === a.kind() && a.match(r, bits)) return true;
    return false;
  };
}

/**
 * KeyDeriver — the default key of a request from its peer address and a header reader: the client address
 * masked to its group (`203.0.113.7`, `2001:db8:1:2::/64`), or undefined when there is no peer address.
 */
export type KeyDeriver = (peer: string | undefined, header: (name: string) => string | undefined) => string | undefined;

/** clientKeyDeriver — a {@link KeyDeriver} for these options. Bad options throw here. */
export function clientKeyDeriver(options: ClientKeyOptions = {}): KeyDeriver {
  const v6 = prefix(options.ipv6Prefix, 'ipv6Prefix', 128, 64);
  const v4 = prefix(options.ipv4Prefix, 'ipv4Prefix', 32, 32);
  const header = options.proxyHeader ?? 'x-forwarded-for';
  if (header !== 'x-forwarded-for' && header !== 'forwarded') {
    throw new RatekeeperError(`proxyHeader must be 'x-forwarded-for' or 'forwarded', got ${show(header)}`);
  }
  const trusted = trustOf(options.trustProxy);

  const group = (a: Address): string => {
    if (a.kind() === 'ipv4') {
      if (v4 === 32) return a.toString();
      return `${mask(a.toByteArray(), v4, 4)}/${v4}`;
    }
    const bytes = a.toByteArray();
    if (v6 === 128) return (ipaddr.fromByteArray(bytes) as ipaddr.IPv6).toRFC5952String();
    return `${mask(bytes, v6, 6)}/${v6}`;
  };

  return (peer, read) => {
    if (peer === undefined || peer === '') return undefined;
    // fast path: the kernel's dotted quad, or its IPv4-mapped IPv6 form, with no proxy to consult
    if (trusted === undefined && v4 === 32) {
      if (peer.indexOf(':') === -1) return peer;
      if (peer.startsWith('::ffff:') && peer.indexOf('.') !== -1) return peer.slice(7);
    }
    let a = parseHop(peer);
    if (a === undefined) return undefined;
    if (trusted !== undefined && trusted(a)) {
      const value = read(header);
      if (value !== undefined && value !== '') {
        const hops = header === 'forwarded' ? (value.length <= MAX_FORWARDED_LENGTH ? forwardedFor(value) : []) : value.split(',');
        for (let i = hops.length - 1; i >= 0; i--) {
          const h = parseHop(hops[i]);
          if (h === undefined) break; // junk from beyond the trusted chain: the last trusted hop stands for it
          a = h;
          if (!trusted(h)) break;
        }
      }
    }
    return group(a);
  };
}

/** mask — the address of `bytes` with all but the first `bits` bits cleared, as text. */
function mask(bytes: number[], bits: number, kind: 4 | 6): string {
  const out = bytes.slice();
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    out[i] &= keep === 0 ? 0 : (0xff << (8 - keep)) & 0xff;
  }
  const a = ipaddr.fromByteArray(out);
  return kind === 6 ? (a as ipaddr.IPv6).toRFC5952String() : a.toString();
}
