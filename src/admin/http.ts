import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * http — the admin handler's small HTTP helpers: JSON replies with the security headers, bad-input errors that name
 * their field, and reading a JSON body (or taking one a framework already parsed).
 */

/** SECURITY_HEADERS — on every reply: a strict CSP (no inline script, nothing from elsewhere), no sniffing, no framing, no referrer. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
});

/** BadInput — a request the API refuses with 400, naming the field at fault. */
export class BadInput extends Error {
  constructor(readonly field: string, message: string, readonly status = 400) {
    super(message);
  }
}

/** send — a reply of `status` with `body` as JSON (no store: the data is live). */
export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body, (_, v: unknown) => (v === Infinity ? null : v));
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/** fail — an error reply: `{ error, field? }`. */
export function fail(res: ServerResponse, status: number, error: string, field?: string, headers?: Record<string, string>): void {
  send(res, status, field === undefined ? { error } : { error, field }, headers);
}

/** MAX_BODY — the largest request body read, bytes. */
const MAX_BODY = 16 * 1024;

/**
 * body — the request's JSON object: `req.body` when a framework parsed it already (Express's json()), else read
 * from the stream (at most 16 KB). Throws BadInput for anything but a JSON object.
 */
export async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const parsed = (req as { body?: unknown }).body;
  let value: unknown = parsed;
  if (parsed === undefined || typeof parsed === 'string' || parsed instanceof Buffer) {
    let text = typeof parsed === 'string' ? parsed : parsed instanceof Buffer ? parsed.toString('utf8') : '';
    if (parsed === undefined && !req.readableEnded) {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > MAX_BODY) throw new BadInput('body', `the body must be at most ${MAX_BODY} bytes`, 413);
        chunks.push(chunk as Buffer);
      }
      text = Buffer.concat(chunks).toString('utf8');
    }
    if (text.trim() === '') throw new BadInput('body', 'the body must be a JSON object, e.g. {"key": "user:1"}');
    try {
      value = JSON.parse(text);
    } catch {
      throw new BadInput('body', 'the body is not valid JSON');
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadInput('body', 'the body must be a JSON object, e.g. {"key": "user:1"}');
  return value as Record<string, unknown>;
}

/** isLoopback — whether an address is this machine's (127.0.0.0/8, ::1, IPv4-mapped 127.x, 'localhost'). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const a = address.toLowerCase();
  return a === 'localhost' || a === '::1' || a.startsWith('127.') || a.startsWith('::ffff:127.');
}
