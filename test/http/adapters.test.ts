/**
 * test/http/adapters — every scenario of scenarios.ts on every adapter (node:http, Express, Fastify, Hono), each
 * serving on a loopback port and called by a real HTTP client, on the memory store.
 */
import { memoryStore } from '../../src/index.js';
import { ADAPTERS } from './apps.js';
import { scenarios } from './scenarios.js';

for (const [name, build] of ADAPTERS) scenarios(`${name} (memory store)`, build, () => memoryStore());
