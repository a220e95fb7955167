/**
 * local-first-exit — a process of local-first-faults' "nothing keeps the process alive" test: a store in local-first
 * mode with unsynced charges (flushEvery 60 s), a rule change whose old policy is detached while charges are unsent,
 * close(), a check after close, the client disconnected; prints 'done' and must then exit on its own.
 * argv[2]: the Redis port. Run by the test runner itself (every file under test/ is), without it, it does nothing.
 */
import { Redis } from 'ioredis';
import { limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import { redisStore } from '../../src/stores/redis/index.js';

const port = Number(process.argv[2]);
if (port > 0) {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  const store = redisStore({ client, prefix: 'lfx:', localFirst: { maxUnsynced: 50, flushEvery: '60s' } });
  const a = limiter({ id: 'x', rules: [rules.gcra({ limit: 1000, per: '1m' })], store });
  for (let i = 0; i < 10; i++) await a.check(`k${i % 3}`);
  const b = limiter({ id: 'x', rules: [rules.gcra({ limit: 2000, per: '1m' })], store });
  b.succeed(a);
  store.detach(a.policy);
  for (let i = 0; i < 10; i++) await b.check(`k${i % 3}`);
  await store.close();
  await b.check('late'); // a check after close charges a copy: its timer must not hold the process
  client.disconnect();
  console.log('done');
}
