/**
 * admin/keys — how a client's key appears in what is written out for people to read later or elsewhere: logs and the
 * live tail. Client keys are often API keys, tokens or e-mail addresses; a log shipped to a third party or a tail
 * watched on a shared screen should not carry them. The admin API's answers (top, inspect, blocks) keep the real key:
 * an operator acts on it.
 */
import { createHash, createHmac } from 'node:crypto';
import { RatekeeperError, show } from '../core/errors.js';

/**
 * KeyView — `plain`: the key as the client sent it; `hash`: `sha256:` and the first 12 hex digits of its SHA-256
 * (`hmac:` and those of its HMAC-SHA256 when a secret is given), the same for the same key in every line, every
 * instance and every restart, so one client's lines can still be followed and counted; `redact`: `(redacted)`.
 */
export type KeyView = 'plain' | 'hash' | 'redact';

/** KEY_VIEWS — the accepted KeyView values. */
export const KEY_VIEWS: readonly KeyView[] = ['plain', 'hash', 'redact'];

/**
 * HASH_HEX — hex digits of the digest kept: 48 bits. Among a million distinct keys the chance that two share a
 * shown hash is about n²/2⁴⁹ ≈ 0.2 %; short enough to read in a log line.
 */
export const HASH_HEX = 12;

/** REDACTED — what `redact` shows instead of a key. */
export const REDACTED = '(redacted)';

/**
 * keyViewer — the function that shows a key per `view` (undefined for `plain`: nothing to do). With `secret`, `hash`
 * is an HMAC: without it, a key from a small space (an IPv4 address, a user id) is found again by hashing every
 * candidate, so give a secret when the keys are guessable; the hash then changes only when the secret does. An empty
 * key (a tail's "skipped" marker) stays empty.
 */
export function keyViewer(view: KeyView, secret?: string): ((key: string) => string) | undefined {
  if (!KEY_VIEWS.includes(view)) throw new RatekeeperError(`logKeys must be plain, hash or redact, got ${show(view)}`);
  if (secret !== undefined && (typeof secret !== 'string' || secret === '')) throw new RatekeeperError(`logKeysSecret must be a non-empty string, got ${show(secret)}`);
  switch (view) {
    case 'plain': return undefined;
    case 'redact': return (key) => (key === '' ? key : REDACTED);
    case 'hash':
      return secret === undefined
        ? (key) => (key === '' ? key : `sha256:${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, HASH_HEX)}`)
        : (key) => (key === '' ? key : `hmac:${createHmac('sha256', secret).update(key, 'utf8').digest('hex').slice(0, HASH_HEX)}`);
  }
}
