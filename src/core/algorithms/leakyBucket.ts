import { measured, lag } from './common.js';
import { TokenBucket } from './tokenBucket.js';

/**
 * LeakyBucket — the leaky bucket as a meter: a level that drains at limit/per; a request is admitted while
 * level + cost <= burst and then adds its cost. It admits exactly what a token bucket of the same shape admits;
 * what it adds is `delay`: how long to hold the request so that requests leave at the smooth rate, as nginx's
 * limit_req without `nodelay` does (the queue ahead of it, level/rate; nginx's `burst=b` is `burst: b + 1` here).
 * State: [level — cost units in the bucket, t — time of the last update, ms]. Its derived numbers are the token
 * bucket's (bucketConstants in tokenBucket.ts), as its Lua twin (src/stores/redis/lua/leakyBucket.lua) pastes the
 * token bucket's templates.
 */
export class LeakyBucket extends TokenBucket {
  override next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
    const ok = super.next(s, o, now, cost, n, no);
    const ahead = n[no] - cost;
    measured.delay = ahead > 0 ? lag(s[o + 1], now) + ahead / this.perMs : 0;
    return ok;
  }
}
