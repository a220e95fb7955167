import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Limiter } from '../limiter.js';
import type { TailEvent } from '../observe/observer.js';
import { SECURITY_HEADERS } from './http.js';
import type { Named } from './api.js';

/** POLL — ms between two reads of the limiters' tails; HEARTBEAT — ms between two comments keeping proxies from closing an idle stream. */
const POLL = 250;
const HEARTBEAT = 15_000;

/**
 * events — GET /admin/events: Server-Sent Events, a sampled live tail of decisions (refusals always, up to the
 * observer's budget), one `decision` event per decision with its limiter's name. The limiters are re-read at every
 * poll (a reloaded configuration's new limiters join the stream). Ends when the client goes away.
 */
export function events(req: IncomingMessage, res: ServerResponse, limiters: () => Named): void {
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  res.write(': ratekeeper live tail\nretry: 2000\n\n');
  /** watches — one per observed limiter, by limiter object (a reload replaces the objects). */
  const watches = new Map<Limiter, { name: string; read(): TailEvent[]; close(): void }>();
  let quiet = 0;
  const poll = (): void => {
    let now: Named;
    try {
      now = limiters();
    } catch {
      return;
    }
    const seen = new Set<Limiter>();
    for (const [name, l] of now) {
      if (l.observer === undefined) continue;
      seen.add(l);
      if (!watches.has(l)) watches.set(l, { name, ...l.observer.watch() });
    }
    let out = '';
    for (const [l, w] of watches) {
      if (!seen.has(l)) {
        w.close();
        watches.delete(l);
        continue;
      }
      for (const e of w.read()) out += `event: decision\ndata: ${JSON.stringify({ limiter: w.name, ...e }, (_, v: unknown) => (v === Infinity ? null : v))}\n\n`;
    }
    quiet += POLL;
    if (out === '' && quiet >= HEARTBEAT) out = ': ping\n\n';
    if (out !== '') {
      quiet = 0;
      res.write(out);
    }
  };
  poll();
  const timer = setInterval(poll, POLL);
  const stop = (): void => {
    clearInterval(timer);
    for (const w of watches.values()) w.close();
    watches.clear();
  };
  req.on('close', stop);
  res.on('close', stop);
}
