export * from './core/index.js';
export { limiter, Limiter, MAX_KEY_LENGTH, type LimiterOptions, type CheckOptions, type BlockOptions, type ExemptOptions } from './limiter.js';
export { checkAll, checkAllSync, type CheckAllItem, type CheckAllResult, type CheckAllOptions } from './multi.js';
export { memoryStore, MemoryStore, MemoryTable, type MemoryStoreOptions } from './stores/memory.js';
export type { Store, BoundStore, OverrideRequest, Part } from './stores/types.js';
