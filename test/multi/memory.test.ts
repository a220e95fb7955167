/** The compound table (checkAll, refunds) on the memory store: the reference, checked against the table's expectations. */
import { test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory.js';
import { same } from '../conformance/run.js';
import { scenarios, run, checkExpectations } from './table.js';

for (const s of scenarios) {
  test(`memory: ${s.name}`, async () => {
    const out = await run(new MemoryStore(), s);
    checkExpectations(s, out);
    same(await run(new MemoryStore(), s), out); // deterministic
  });
}
