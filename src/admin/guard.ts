import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';

/**
 * guard — what keeps a web page from driving the admin listener. A page of another origin can make the operator's
 * browser send requests to a loopback listener (it cannot read the answers, but a POST still acts), and can point a
 * name of its own at 127.0.0.1 (DNS rebinding: then it reads them too). So: the `Host` must be the listener's own
 * address or a name the operator configured (rebinding arrives with the attacker's name); a request a browser marks
 * as coming from another site (`Sec-Fetch-Site`, `Origin`) is refused; and a change must be sent as
 * `Content-Type: application/json`, which no form and no `no-cors` fetch can send without a CORS preflight, which
 * the handler never grants.
 */

/** parseIp — a literal IPv4 (dotted quad) or IPv6 address, IPv4-mapped IPv6 as IPv4; undefined for anything else (names). */
export function parseIp(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (text.indexOf(':') === -1) return ipaddr.IPv4.isValidFourPartDecimal(text) ? ipaddr.IPv4.parse(text) : undefined;
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const a = ipaddr.IPv6.parse(text);
  return a.isIPv4MappedAddress() ? a.toIPv4Address() : a;
}

/**
 * isLoopback — whether an address is this machine's loopback: a literal in 127.0.0.0/8 or ::1 (IPv4-mapped too), or
 * the name `localhost` (RFC 6761). A name that merely starts with `127.` (`127.0.0.1.evil.example`) is not.
 */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  if (address.toLowerCase() === 'localhost') return true;
  const a = parseIp(address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address);
  return a !== undefined && a.range() === 'loopback';
}

/** AllowedHosts — the `Host` names a listener answers besides its own address; `'*'`: any (the check is off). */
export type AllowedHosts = readonly string[] | '*';

/** splitHost — a Host header's name (lowercase, IPv6 without brackets) and port (undefined when not given); undefined when malformed. */
function splitHost(host: string): { name: string; port: number | undefined } | undefined {
  const h = host.trim().toLowerCase();
  let name: string;
  let rest: string;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end < 0) return undefined;
    name = h.slice(1, end);
    rest = h.slice(end + 1);
  } else {
    const colon = h.indexOf(':');
    name = colon < 0 ? h : h.slice(0, colon);
    rest = colon < 0 ? '' : h.slice(colon);
  }
  if (name === '') return undefined;
  if (rest === '') return { name, port: undefined };
  if (!/^:\d{1,5}$/.test(rest)) return undefined;
  return { name, port: Number(rest.slice(1)) };
}

/**
 * hostRefusal — why the request's `Host` is not one this listener answers to, or undefined when it is: the address the
 * connection arrived at (its IP and port; `localhost` too when that is loopback), or an entry of `allowed` (`name`:
 * any port; `name:port`: that port). A Host without a port means port 80.
 */
export function hostRefusal(req: IncomingMessage, allowed: AllowedHosts): string | undefined {
  if (allowed === '*') return undefined;
  const raw = req.headers.host;
  if (raw === undefined || raw === '') return 'a request must name this listener in its Host header';
  const h = splitHost(raw);
  if (h === undefined) return 'the Host header is malformed';
  const port = h.port ?? 80;
  const local = req.socket.localAddress;
  const localPort = req.socket.localPort;
  if (port === localPort && local !== undefined) {
    if (h.name === 'localhost' && isLoopback(local)) return undefined;
    const a = parseIp(h.name);
    const b = parseIp(local);
    if (a !== undefined && b !== undefined && a.kind() === b.kind() && a.toNormalizedString() === b.toNormalizedString()) return undefined;
  }
  for (const entry of allowed) {
    const e = splitHost(entry);
    if (e !== undefined && e.name === h.name && (e.port === undefined || e.port === port)) return undefined;
  }
  return `this listener does not answer to Host ${JSON.stringify(raw.slice(0, 100))}: use its address, or add the name to its allowed hosts (--admin-allowed-hosts, allowedHosts)`;
}

/**
 * siteRefusal — why the request comes from a page of another site, or undefined: `Sec-Fetch-Site` other than
 * `same-origin` or `none` (a user's own navigation); without that header (a browser that does not send it), an
 * `Origin` whose host is not the request's `Host` (`null` included). A browser's own `Sec-Fetch-Site` (no page can set
 * it) outranks the Origin comparison: behind a reverse proxy that rewrites `Host` (nginx's default), the dashboard's
 * same-origin requests carry the proxy's origin and the listener's Host. Tools (curl, scripts) send neither and pass.
 */
export function siteRefusal(req: IncomingMessage): string | undefined {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `the admin API does not answer requests from other sites (Sec-Fetch-Site: ${site})`;
  if (site !== undefined) return undefined;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  let host: string | undefined;
  try {
    host = origin === 'null' ? undefined : new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (host === undefined || host.toLowerCase() !== (req.headers.host ?? '').toLowerCase()) {
    return `the admin API does not answer requests from other origins (Origin: ${origin.slice(0, 100)})`;
  }
  return undefined;
}

/** jsonRefusal — why a state-changing request is not declared as JSON (`Content-Type: application/json`), or undefined. */
export function jsonRefusal(req: IncomingMessage): string | undefined {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  return type === 'application/json' ? undefined : `a change must be sent with Content-Type: application/json${type === '' ? '' : `, got ${type.slice(0, 100)}`}`;
}
