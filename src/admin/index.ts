/**
 * ratekeeper/admin — the operators' view: an admin HTTP handler (JSON API, live tail, dashboard) any node:http,
 * Express or Fastify app can mount, and serveAdmin(), the same on a listener of its own.
 */
export { adminHandler, MIN_TOKEN, type AdminHandler, type AdminLogEntry, type AdminOptions, type ConfigView, type Limiters } from './handler.js';
export { serveAdmin, type AdminServer, type ServeAdminOptions } from './serve.js';
export { keyViewer, type KeyView } from './keys.js';
export { Observer, mergeSummaries, type ObserveOptions, type Stats, type TailEvent, type SharedSummary } from '../observe/observer.js';
export { HeavyHitters, type HeavyHitter, type HeavyHittersOptions } from '../observe/heavyHitters.js';
export type { TopEntry, TopOptions, ListOptions, Inspection } from '../limiter.js';
