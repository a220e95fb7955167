/**
 * connect — an ioredis client for a Redis deployment described as data (one server, a Cluster, or a Sentinel set;
 * TLS; a password), and the wait for its first connection, bounded in time, that tells a configuration error (a
 * password refused, a certificate not trusted) from a server that is merely not there yet. The caller passes the
 * ioredis module (an optional peer dependency: loaded by whoever needs it) and owns the client.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { redactSecrets } from '../../core/redact.js';

/** RedisNode — one address: host and TCP port. */
export interface RedisNode {
  host: string;
  port: number;
}

/**
 * RedisConnectOptions — where Redis is and how to log in.
 * - `mode: 'single'` — `nodes[0]` (or `path`, a unix socket); `'cluster'` — some nodes of the Cluster (the client
 *   learns the rest); `'sentinel'` — `nodes` are the Sentinels, asked for the master named `sentinel.name`.
 * - `tls` — TLS options for the Redis servers (Cluster nodes, the Sentinel set's master): trusted CAs, client
 *   certificate and key, `checkServerIdentity`. Undefined: plain TCP. With Sentinel, the Sentinels themselves are
 *   reached over TLS too (as envoyproxy/ratelimit does) unless `sentinel.tls` is false.
 */
export interface RedisConnectOptions {
  mode: 'single' | 'cluster' | 'sentinel';
  nodes: RedisNode[];
  /** path — a unix socket (mode single): replaces nodes[0]. */
  path?: string;
  db?: number;
  username?: string;
  password?: string;
  tls?: ConnectionOptions;
  sentinel?: { name: string; username?: string; password?: string; tls?: boolean };
  /** connectTimeout — ms one connection attempt (TCP, TLS and AUTH) may take. @default 10_000 */
  connectTimeout?: number;
}

/**
 * ConnectFailure — why the first connection failed: `auth` (the servers refused the password), `sentinel-auth` (the
 * Sentinels refused theirs), `sentinel-master` (the Sentinels know no master of that name), `tls` (a handshake or a
 * certificate), `sentinel` (no Sentinel answered in time), `unreachable` (no server answered in time).
 */
export type ConnectFailure = 'auth' | 'sentinel-auth' | 'sentinel-master' | 'tls' | 'sentinel' | 'unreachable';

/** RedisConnectError — the first connection failed, with why; the message carries no password. */
export class RedisConnectError extends Error {
  constructor(readonly reason: ConnectFailure, message: string) {
    super(message);
    this.name = 'RedisConnectError';
  }
}

/** IoredisModule — what this file uses of `import('ioredis')`. */
export interface IoredisModule {
  Redis: new (options: object) => IoredisClient;
  Cluster: new (nodes: RedisNode[], options: object) => IoredisClient;
}

/** IoredisClient — an ioredis Redis or Cluster as seen here (an event emitter with a status). */
export interface IoredisClient {
  readonly status: string;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  disconnect(): void;
}

/**
 * RETRY_MS — the longest pause between reconnection attempts, ms: short, so that after a failover (a Sentinel
 * promoting a replica, a Cluster node coming back) the client is back within about half a second of the new master
 * answering; ioredis's default grows to 2 s.
 */
const RETRY_MS = 500;

/** ioredisOptions — the options of ioredis's Redis (single, sentinel) or of each node of its Cluster (`redisOptions`). */
export function ioredisOptions(o: RedisConnectOptions, base: object = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...base,
    connectTimeout: o.connectTimeout ?? 10_000,
    retryStrategy: (times: number) => Math.min(times * 50, RETRY_MS),
  };
  if (o.username !== undefined) out.username = o.username;
  if (o.password !== undefined) out.password = o.password;
  if (o.db !== undefined) out.db = o.db;
  if (o.tls !== undefined) out.tls = o.tls;
  if (o.mode === 'single') {
    if (o.path !== undefined) out.path = o.path;
    else {
      out.host = o.nodes[0].host;
      out.port = o.nodes[0].port;
    }
  } else if (o.mode === 'sentinel') {
    const s = o.sentinel!;
    out.sentinels = o.nodes.map((n) => ({ host: n.host, port: n.port }));
    out.name = s.name;
    if (s.username !== undefined) out.sentinelUsername = s.username;
    if (s.password !== undefined) out.sentinelPassword = s.password;
    if (o.tls !== undefined) {
      out.enableTLSForSentinelMode = true;
      if (s.tls !== false) out.sentinelTLS = o.tls;
    }
    // a master demoted by a failover while it stays up answers writes with READONLY: reconnect (through the
    // Sentinels, to the promoted one), without resending the refused command (the store's failure policy answers it).
    // ioredis's failoverDetector (subscribing to +switch-master) is left off: with it, a SIGKILLed master left the
    // client reconnecting for over 15 s in about one failover in six here (test/redis/sentinel.test.ts)
    out.reconnectOnError = (e: Error) => (/^READONLY/.test(e.message) ? 1 : false);
    out.sentinelRetryStrategy = (times: number) => Math.min(times * 50, RETRY_MS);
  }
  return out;
}

/** createClient — an ioredis Redis (single, sentinel) or Cluster for `o`, connecting at once. */
export function createClient(ioredis: IoredisModule, o: RedisConnectOptions, base: object = {}): IoredisClient {
  if (o.mode === 'cluster') {
    return new ioredis.Cluster(o.nodes, {
      redisOptions: ioredisOptions(o, base),
      clusterRetryStrategy: (times: number) => Math.min(times * 50, RETRY_MS),
      // a TLS certificate names the host the client was given: keep the names as given (ElastiCache's advice)
      ...(o.tls !== undefined ? { dnsLookup: (address: string, cb: (e: null, a: string) => void) => cb(null, address) } : {}),
    });
  }
  return new ioredis.Redis(ioredisOptions(o, base));
}

/** AUTH_ERROR — a server refusing the credentials (or asking for some). */
const AUTH_ERROR = /WRONGPASS|NOAUTH|invalid password|invalid username-password|AUTH <password> called without|-NOPERM|without any password configured/i;

/** TLS_ERROR — a TLS handshake or certificate failure (Node's error codes and OpenSSL's messages). */
const TLS_ERROR = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS|ERR_SSL|EPROTO|certificate|wrong version number|handshake|ssl3?_|tlsv1/i;

/** classify — what kind of failure an error from the client is (undefined: a network one, worth waiting out). */
export function classify(e: unknown): 'auth' | 'tls' | undefined {
  const err = e as { message?: unknown; code?: unknown; cause?: unknown; lastNodeError?: unknown };
  const text = `${String(err?.code ?? '')} ${String(err?.message ?? e)}`;
  if (AUTH_ERROR.test(text)) return 'auth';
  if (TLS_ERROR.test(text)) return 'tls';
  if (err?.lastNodeError !== undefined) return classify(err.lastNodeError);
  return undefined;
}

/**
 * waitReady — resolves once the client is ready (connected, logged in; a Cluster with its slot table; a Sentinel
 * client on its master). Rejects with a RedisConnectError at once when the servers refuse the password or the TLS
 * handshake fails (an error of configuration: waiting would not help), and after `timeout` ms (`unreachable`, with
 * the last network error) when nothing answered. `secrets` are masked out of every message. `onNetworkError`, when
 * given, is called at the first network error and may name a refusal (a 'tls' failure at once).
 */
export function waitReady(client: IoredisClient, timeout: number, secrets: readonly (string | undefined)[] = [], sentinel = false, onNetworkError?: () => Promise<string | undefined>): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let last: unknown;
    let looked = false;
    const done = (e?: RedisConnectError): void => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      client.off('node error', onError);
      if (e === undefined) resolve();
      else reject(e);
    };
    const onReady = (): void => done();
    const onError = (e: unknown): void => {
      last = e;
      const kind = classify(e);
      const msg = redactSecrets(e instanceof Error ? e.message : String(e), secrets);
      // a Sentinel client reports its Sentinels' own refusals as "All sentinels are unreachable … Last error: …"
      const viaSentinels = sentinel && /All sentinels are unreachable/i.test(msg);
      if (kind === 'auth') done(new RedisConnectError(viaSentinels ? 'sentinel-auth' : 'auth', msg));
      else if (kind === 'tls') done(new RedisConnectError('tls', msg));
      else if (viaSentinels && /No such master/i.test(msg)) done(new RedisConnectError('sentinel-master', msg));
      else if (onNetworkError !== undefined && !looked) {
        // a network error may be a refusal in disguise (mutual TLS answers a missing certificate with a reset): look
        // once, now, rather than after the client's retries have used up the timeout
        looked = true;
        void onNetworkError().then((why) => {
          if (why !== undefined) done(new RedisConnectError('tls', redactSecrets(why, secrets)));
        }, () => undefined);
      }
    };
    const timer = setTimeout(() => {
      const why = last === undefined ? 'no answer' : redactSecrets(last instanceof Error ? last.message : String(last), secrets);
      const reason: ConnectFailure = sentinel && /sentinel/i.test(why) ? 'sentinel' : 'unreachable';
      done(new RedisConnectError(reason, `not ready within ${timeout} ms (${why})`));
    }, timeout);
    timer.unref();
    client.on('ready', onReady);
    client.on('error', onError);
    client.on('node error', onError);
  });
}

/**
 * tlsHandshake — undefined when a TLS handshake with `node` under `tls` succeeds within `timeout` ms, else why not (a
 * network error or a timeout: also undefined, that is not TLS's to say). ioredis reports a Sentinel it could not
 * reach over TLS only as "Connection is closed": the service shakes hands with the first Sentinel itself to name
 * the certificate problem.
 */
export function tlsHandshake(node: RedisNode, tls: ConnectionOptions, timeout: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const sock = tlsConnect({ ...tls, host: node.host, port: node.port, servername: /^[\d.]+$|:/.test(node.host) ? undefined : node.host });
    const done = (why: string | undefined): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(undefined), timeout);
    timer.unref();
    sock.once('secureConnect', () => done(undefined));
    sock.once('error', (e: Error & { code?: string }) => done(classify(e) === 'tls' ? e.message : undefined));
  });
}

/**
 * tlsRefusal — why a TLS server refuses this client after the handshake, else undefined. Under TLS 1.3 a server that
 * requires a client certificate checks it after the client's handshake is done: the client learns of the refusal
 * only at its first read, as the server's alert ("certificate required") or as a bare reset when the alert was lost
 * to the close; ioredis then reports ECONNRESET, which reads like a server that is down. One handshake and one
 * `PING` to `node`, bounded by `timeout` ms: any answer, or no handshake at all (down, refused), is undefined.
 */
export function tlsRefusal(node: RedisNode, tls: ConnectionOptions, timeout: number): Promise<string | undefined> {
  return probe(timeout, (finish) => {
    let shaken = false;
    const sock = tlsConnect({ ...tls, host: node.host, port: node.port, servername: /^[\d.]+$|:/.test(node.host) ? undefined : node.host }, () => {
      shaken = true;
      sock.write('PING\r\n');
    });
    sock.on('data', () => finish(undefined));
    sock.on('error', (e: Error) => finish(classify(e) === 'tls' ? e.message : shaken ? `the server closed the connection after the TLS handshake (${e.message}): it may require a client certificate` : undefined));
    sock.on('close', () => finish(shaken ? 'the server closed the connection after the TLS handshake: it may require a client certificate' : undefined));
    return sock;
  });
}

/**
 * wrongTransport — why the first connection failed when the transport is the wrong one, else undefined: a server
 * that completes a TLS handshake though the client speaks plain text (a TLS port: Redis resets the connection, ioredis
 * says only ECONNRESET), or one that answers a plain `PING` (`+PONG`, `-NOAUTH …`, `-ERR …`) though the client
 * speaks TLS (a plain port: Redis waits for a command and never answers the handshake, "no answer"). One look
 * at `node`, bounded by `timeout` ms; a server that does neither (down, not Redis) is undefined, the usual wait.
 */
export function wrongTransport(node: RedisNode, clientTls: boolean, timeout: number): Promise<string | undefined> {
  return probe(timeout, (finish) => {
    const where = `${node.host}:${node.port}`;
    const sock: Socket = clientTls
      ? netConnect({ host: node.host, port: node.port }, () => void sock.write('PING\r\n'))
      : tlsConnect({ host: node.host, port: node.port, rejectUnauthorized: false }, () => finish(`${where} speaks TLS: use a rediss:// URL or --redis-tls (REDIS_TLS=true)`));
    if (clientTls) {
      let got = '';
      sock.on('data', (b: Buffer) => {
        got += b.toString('latin1');
        if (/^[+-]/.test(got) && got.includes('\r\n')) finish(`${where} speaks plain Redis, not TLS (it answered ${JSON.stringify(got.split('\r\n')[0].slice(0, 40))}): use a redis:// URL without --redis-tls`);
      });
    }
    sock.on('error', () => finish(undefined));
    sock.on('close', () => finish(undefined));
    return sock;
  });
}

/**
 * probe — one look at a server over the socket `open` makes: the first `finish(why)` settles it (the socket
 * destroyed, `why` resolved); `timeout` ms without one settle it undefined.
 */
function probe(timeout: number, open: (finish: (why: string | undefined) => void) => Socket): Promise<string | undefined> {
  return new Promise((resolve) => {
    let sock: Socket | undefined;
    let done = false;
    const finish = (why: string | undefined): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock?.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => finish(undefined), timeout);
    timer.unref();
    sock = open(finish);
    if (done) sock.destroy();
  });
}
