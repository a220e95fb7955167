/**
 * redact — credentials taken out of text that is about to be shown: a log line, an error message, the store's
 * description, a usage error echoing a flag's value. One function for every place a Redis URL (or any URL) is shown,
 * so a password cannot leak through one that was forgotten.
 */

/**
 * USERINFO — `scheme://userinfo@` anywhere in a text: the scheme, then everything up to the last `@` before the
 * host part ends (a password may itself contain `@`, `:` or `/` when the user did not percent-encode it).
 */
const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)([^\s,@]*(?:@[^\s,@]*(?=@))*)@/gi;

/** MASK — what a secret is replaced with. */
export const MASK = '***';

/**
 * redactUrl — `text` with the credentials of every URL in it masked: `rediss://user:secret@host:6380` becomes
 * `rediss://user:***@host:6380`, `redis://:secret@host` becomes `redis://:***@host`, and a userinfo without a colon
 * (`redis://secret@host`: some clients read it as a password) is masked whole. Text without URLs, and URLs without
 * credentials, come back unchanged; lists (`a,b`) and whole messages are handled word by word.
 * @example redactUrl('cannot connect to redis://app:hunter2@10.0.0.1:6379') // 'cannot connect to redis://app:***@10.0.0.1:6379'
 */
export function redactUrl(text: string): string {
  if (!text.includes('@')) return text;
  return text.replace(USERINFO, (_m, scheme: string, info: string) => {
    const colon = info.indexOf(':');
    return colon < 0 ? `${scheme}${MASK}@` : `${scheme}${info.slice(0, colon)}:${MASK}@`;
  });
}

/**
 * redactSecrets — `text` with URL credentials masked (redactUrl) and each of `secrets` (passwords known to the
 * caller: REDIS_AUTH, a Sentinel password) replaced by the mask wherever it appears, for messages that may quote one
 * (a client library's error echoing its options). Secrets shorter than 3 characters are masked only inside URLs: a
 * one-letter password would otherwise mask every such letter of the message.
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = redactUrl(text);
  for (const s of secrets) if (s !== undefined && s.length >= 3) out = out.split(s).join(MASK);
  return out;
}

/** SCHEME — a URL's `scheme://`. */
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * redactAddress — one address as given (a flag's or a variable's whole value, not a message): everything before its
 * last `@` is credentials, whatever characters they hold — a comma or a space stops redactUrl's word-by-word masking,
 * and envoy's scheme-less `user:password@host:port` has no scheme for it to find. The user name is kept.
 * @example redactAddress('app:hun,ter2@10.0.0.1:6379') // 'app:***@10.0.0.1:6379'
 */
export function redactAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  const head = SCHEME.exec(address)?.[0] ?? '';
  if (at < head.length) return address;
  const info = address.slice(head.length, at);
  const colon = info.indexOf(':');
  return `${head}${colon < 0 ? '' : info.slice(0, colon + 1)}${MASK}${address.slice(at)}`;
}
