export * from './core/index.js';
export { limiter, Limiter, MAX_KEY_LENGTH, type LimiterOptions, type CheckOptions, type BlockOptions, type ExemptOptions } from './limiter.js';
export { checkAll, type CheckAllItem, type CheckAllResult } from './multi.js';
export { memoryStore, MemoryStore, MemoryTable, type MemoryStoreOptions } from './stores/memory.js';
export type { Store, BoundStore, OverrideRequest } from './stores/types.js';
