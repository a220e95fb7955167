/** test/admin/api — the admin API on the memory store (the same cases run on Redis and Cluster in redis.test.ts). */
import { describe } from 'node:test';
import { memoryStore } from '../../src/index.js';
import { adminCases } from './cases.js';

describe('admin API on the memory store', () => adminCases(() => memoryStore()));
