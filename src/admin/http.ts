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
  const text = safeJson(body);
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

/**
 * UNSEEN — characters that change how text around them is shown, or are not shown at all: C0 and C1 controls, DEL,
 * the bidirectional marks, embeddings, overrides and isolates (U+200E/F, U+202A–202E, U+2066–2069, U+061C), zero-width
 * ones (U+200B–200D, U+2060–2064, U+FEFF), the soft hyphen, the line and paragraph separators (U+2028/9), and lone
 * surrogates. A client key holding them could pass for another key; see {@link safeJson}.
 */
export const UNSEEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * safeJson — JSON.stringify (Infinity as null) with every {@link UNSEEN} character written as a `\uXXXX` escape: the
 * same value for a JSON reader, and text in which a key with a right-to-left override or a control character shows as
 * what it is wherever the raw text is read (a log line, the SSE stream in a terminal).
 */
export function safeJson(value: unknown): string {
  const text = JSON.stringify(value, (_, v: unknown) => (v === Infinity ? null : v));
  UNSEEN.lastIndex = 0;
  return UNSEEN.test(text) ? text.replace(UNSEEN, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : text;
}
