import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Limiter } from '../limiter.js';
import type { TailEvent } from '../observe/observer.js';
import { SECURITY_HEADERS, fail, safeJson } from './http.js';
import type { Named } from './api.js';

/** POLL — ms between two reads of the limiters' tails; HEARTBEAT — ms between two comments keeping proxies from closing an idle stream. */
const POLL = 250;
const HEARTBEAT = 15_000;
/** MAX_BACKLOG — bytes a tail may leave unread in its socket's buffer; past it the client is too slow and is closed. */
const MAX_BACKLOG = 1 << 20;

/** Client — one open tail: its response, and which limiters it follows (`picked`: a limiter's name, '' for all). */
interface Client {
  res: ServerResponse;
  picked: string;
  /** wrote — ms (Date.now) of the latest write: a heartbeat goes out after HEARTBEAT of silence. */
  wrote: number;
}

/** Group — the clients following the same limiters, and how to list those limiters now. */
interface Group {
  clients: Set<Client>;
  limiters: () => Named;
}

/**
 * EventHub — GET /admin/events: Server-Sent Events, a sampled live tail of decisions (refusals always, up to the
 * observer's budget), one `decision` event per decision with its limiter's name. At most `max` tails at once (503
 * past it). One timer for all of them: every POLL ms each followed limiter's tail is read once and each event
 * serialized once; the clients following the same limiters (all of them, or one by `?limiter=`) are written the same
 * string. So the cost of a decision's event does not grow with the number of tails. The limiters are re-read at
 * every poll (a reloaded configuration's new limiters join the stream). A tail ends when its client goes away, or
 * when it leaves more than MAX_BACKLOG bytes unread.
 */
export class EventHub {
  /** groups — by `picked`; a group exists while it has clients. */
  private readonly groups = new Map<string, Group>();
  /** watches — one per followed limiter (by object: a reload replaces them), read once per poll. */
  private readonly watches = new Map<Limiter, { name: string; read(): TailEvent[]; close(): void }>();
  private timer: NodeJS.Timeout | undefined;
  private count = 0;

  /** shown — how a key is written into the stream (AdminOptions.logKeys); undefined: as the client sent it. */
  constructor(readonly max: number, private readonly shown?: (key: string) => string) {}

  /** size — the tails open now. */
  get size(): number {
    return this.count;
  }

  /** join — opens a tail on `res` for the limiters `limiters()` lists (picked: their `?limiter=`, '' for all), or answers 503 when full. */
  join(req: IncomingMessage, res: ServerResponse, picked: string, limiters: () => Named): void {
    if (this.count >= this.max) {
      fail(res, 503, `too many live tails open (${this.max}, the limit of maxEventClients / --admin-max-event-clients): close one, or poll /admin/top`, undefined, { 'retry-after': '5' });
      return;
    }
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.write(': ratekeeper live tail\nretry: 2000\n\n');
    let g = this.groups.get(picked);
    if (g === undefined) this.groups.set(picked, (g = { clients: new Set(), limiters }));
    const client: Client = { res, picked, wrote: Date.now() };
    g.clients.add(client);
    this.count++;
    let gone = false;
    const leave = (): void => {
      if (gone) return;
      gone = true;
      this.leave(client);
    };
    req.on('close', leave);
    res.on('close', leave);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.poll(), POLL);
      this.timer.unref();
    }
    this.poll();
  }

  private leave(client: Client): void {
    const g = this.groups.get(client.picked);
    if (g === undefined || !g.clients.delete(client)) return;
    this.count--;
    if (g.clients.size === 0) this.groups.delete(client.picked);
    if (this.count === 0) this.stop();
  }

  /** stop — ends the timer and every watch (no tail is open). */
  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    for (const w of this.watches.values()) w.close();
    this.watches.clear();
  }

  /** poll — reads each followed limiter's tail once, and writes each group its events, serialized once. */
  private poll(): void {
    const lists = new Map<Group, Limiter[]>();
    const seen = new Set<Limiter>();
    for (const g of this.groups.values()) {
      let now: Named;
      try {
        now = g.limiters();
      } catch {
        continue; // the picked limiter is gone (a reload): its tails stay open, quiet
      }
      const list: Limiter[] = [];
      for (const [name, l] of now) {
        if (l.observer === undefined) continue;
        list.push(l);
        seen.add(l);
        if (!this.watches.has(l)) this.watches.set(l, { name, ...l.observer.watch() });
      }
      lists.set(g, list);
    }
    /** text — per limiter, its new events as SSE text (each serialized once, whatever the number of tails). */
    const text = new Map<Limiter, string>();
    for (const [l, w] of this.watches) {
      if (!seen.has(l)) {
        w.close();
        this.watches.delete(l);
        continue;
      }
      let out = '';
      const shown = this.shown;
      // the events are the observer's own objects (other watches read them too): the shown key goes in the copy
      for (const e of w.read()) out += `event: decision\ndata: ${safeJson(shown === undefined ? { limiter: w.name, ...e } : { limiter: w.name, ...e, key: shown(e.key) })}\n\n`;
      text.set(l, out);
    }
    const now = Date.now();
    for (const [g, list] of lists) {
      let out = '';
      for (const l of list) out += text.get(l) ?? '';
      for (const c of g.clients) {
        const res = c.res;
        if (res.writableLength > MAX_BACKLOG) {
          res.destroy(); // a client that does not read: its 'close' removes it
          continue;
        }
        if (out !== '') {
          res.write(out);
          c.wrote = now;
        } else if (now - c.wrote >= HEARTBEAT) {
          res.write(': ping\n\n');
          c.wrote = now;
        }
      }
    }
  }
}
