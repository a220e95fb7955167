/** The scenario table on the memory store: the reference every other store is compared with, checked against the table's own expectations. */
import { test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory.js';
import { scenarios } from './scenarios.js';
import { checkExpectations, run, same } from './run.js';

for (const s of scenarios) {
  test(`memory: ${s.name}`, async () => {
    const d = await run(new MemoryStore(), s);
    checkExpectations(s, d);
    same(await run(new MemoryStore(), s), d); // deterministic: a second run decides the same
  });
}
