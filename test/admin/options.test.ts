/** Misspelled options of the operators' view are errors naming the option and the closest real one. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { limiter, memoryStore } from '../../src/index.js';
import { adminHandler, serveAdmin } from '../../src/admin/index.js';

test('observe, top, blocks, inspect: a misspelled option names itself and the closest real one', async () => {
  assert.throws(() => limiter({ rules: '10/s', observe: { capacty: 100 } as never }), /observe\.capacty is not an option of observe \(did you mean `capacity`\?\)/);
  const lim = limiter({ rules: '10/s', store: memoryStore(), observe: { capacity: 100 } });
  await assert.rejects(lim.top({ count: 5 } as never), /top\.count is not an option of top/);
  await assert.rejects(lim.blocks({ maxage: 1 } as never), /blocks\.maxage is not an option of blocks \(did you mean `maxAge`\?\)/);
  await assert.rejects(lim.inspect('k', { nwo: 1 } as never), /inspect\.nwo is not an option of inspect \(did you mean `now`\?\)/);
  // the good spellings work
  assert.deepEqual(await lim.top({ n: 5, by: 'rate' }), []);
});

test('adminHandler and serveAdmin: a misspelled option names itself and the closest real one', async () => {
  const lim = limiter({ rules: '10/s', observe: true });
  assert.throws(() => adminHandler({ limiters: { lim }, tokn: 'x'.repeat(20) } as never), /adminHandler\.tokn is not an option of adminHandler \(did you mean `token`\?\)/);
  await assert.rejects(serveAdmin({ limiters: { lim }, prot: 0 } as never), /serveAdmin\.prot is not an option of serveAdmin \(did you mean `port`\?\)/);
  const admin = await serveAdmin({ limiters: { lim }, port: 0 });
  await admin.close();
});
