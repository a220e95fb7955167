/**
 * key — the store key of a descriptor: `domain:key=value&key=value`, readable, and injective (two different
 * (domain, entries) never share a key). Each part escapes, as `%XX`, `%` and the separators that could end it:
 * the domain `:`; a key `=` and `&`; a value `&` and `*`. A value is everything up to the next `&`, so it may hold
 * `:` and `=` as they are (`edge:remote_address=2001:db8::1`). The `*` of a value is escaped so that a
 * `share_threshold` wildcard, written raw (`files=files/*`), is never the key of a literal value.
 * (envoyproxy/ratelimit's `domain_key_value_` is not injective: key `a_b` with value `c` and key `a` with value `b_c`
 * share a counter there.)
 */

/** DOMAIN, KEY, VALUE, PATTERN — bit masks of {@link SPECIAL}: which characters each part escapes. */
const DOMAIN = 1;
const KEY = 2;
const VALUE = 4;
const PATTERN = 8;
/** SPECIAL — per ASCII code, the parts that escape it (`%` is escaped by all). */
const SPECIAL = new Uint8Array(128);
SPECIAL[37] = DOMAIN | KEY | VALUE | PATTERN; // %
SPECIAL[58] = DOMAIN; // :
SPECIAL[61] = KEY; // =
SPECIAL[38] = KEY | VALUE | PATTERN; // &
SPECIAL[42] = VALUE; // *

/** escape — `s` with every character the part `mask` escapes written as `%XX`; `s` itself when there is none. */
function escape(s: string, mask: number): string {
  const n = s.length;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 128 && (SPECIAL[c] & mask) !== 0) break;
  }
  if (i === n) return s;
  let out = s.slice(0, i);
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    out += c < 128 && (SPECIAL[c] & mask) !== 0 ? `%${c.toString(16).toUpperCase()}` : s[i];
  }
  return out;
}

/** escDomain, escKey, escValue, escPattern — the escapes of each part (see the file comment). */
export const escDomain = (s: string): string => escape(s, DOMAIN);
export const escKey = (s: string): string => escape(s, KEY);
export const escValue = (s: string): string => escape(s, VALUE);
/** escPattern — a wildcard value: `*` stays raw (it marks the pattern), `&` and `%` are escaped. */
export const escPattern = (s: string): string => escape(s, PATTERN);

/**
 * descriptorKey — the store key of a request descriptor in `domain`, every value as sent
 * (`descriptorKey('messaging', [{ key: 'to_number', value: '2061111111' }])` is `'messaging:to_number=2061111111'`).
 * {@link Match.key} is this key unless a `share_threshold` wildcard replaced some values.
 */
export function descriptorKey(domain: string, entries: readonly { key: string; value: string }[]): string {
  return domainSpace(domain) + entriesKey(entries);
}

/**
 * domainSpace — the namespace of a domain's limiters in the store: `domain:` (escaped), what {@link descriptorKey}
 * puts in front of {@link entriesKey}. The limiter adds it below its API, so Redis keys are the full descriptor keys.
 */
export function domainSpace(domain: string): string {
  return escDomain(domain) + ':';
}

/**
 * entriesKey — the client key of a descriptor as the operators see it, the domain left out (the limiter is per
 * domain already): `remote_address=10.0.0.1`, `message_type=marketing&to_number=2061111111`, escaped as in
 * {@link descriptorKey}.
 */
export function entriesKey(entries: readonly { key: string; value: string }[]): string {
  let out = '';
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) out += '&';
    out += escKey(entries[i].key) + '=' + escValue(entries[i].value);
  }
  return out;
}

/**
 * clientKeyOf — the operators' spelling of a client key for the limit of config id `id` (`edge:remote_address`):
 * where the limit's descriptors have one entry, a bare value (`10.0.0.1`) means that entry (`remote_address=10.0.0.1`,
 * the value escaped); a key already written as `remote_address=…`, and any key of a limit with several entries, is
 * taken as it is. Undefined when there is nothing to translate (several entries).
 */
export function clientKeyOf(id: string): ((key: string) => string) | undefined {
  const colon = id.indexOf(':');
  const path = colon < 0 ? id : id.slice(colon + 1);
  if (path === '' || path.includes('&')) return undefined;
  const eq = path.indexOf('=');
  const head = `${eq < 0 ? path : path.slice(0, eq)}=`;
  return (key) => (key.startsWith(head) ? key : head + escValue(key));
}

/**
 * sharedKey — the key with the entries whose index has a pattern in `patterns` written as that pattern
 * (`share_threshold`).
 */
export function sharedKey(domain: string, entries: readonly { key: string; value: string }[], patterns: readonly (string | undefined)[]): string {
  return domainSpace(domain) + sharedEntriesKey(entries, patterns);
}

/** sharedEntriesKey — {@link sharedKey} without the domain: the client key a `share_threshold` wildcard shares. */
export function sharedEntriesKey(entries: readonly { key: string; value: string }[], patterns: readonly (string | undefined)[]): string {
  let out = '';
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) out += '&';
    const p = patterns[i];
    out += escKey(entries[i].key) + '=' + (p === undefined ? escValue(entries[i].value) : escPattern(p));
  }
  return out;
}
