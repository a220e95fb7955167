/**
 * server/serveHelp — the help texts of `ratekeeper serve` and `ratekeeper config check`: every flag with its
 * environment variable and default (the flags themselves are read in cli.ts, tlsFlags.ts and redisOptions.ts).
 */
import { REDIS_HELP } from './redisOptions.js';

export const SERVE_HELP = `ratekeeper serve — the rate limit service: Envoy's RLS v3 over gRPC, envoyproxy/ratelimit's POST /json,
the native POST /v1/check, GET /v1/auth (nginx auth_request), GET /healthcheck and GET /metrics; state in memory
(one instance) or Redis (a fleet). Three listeners: HTTP (:8080), gRPC (:8081) and the admin API and dashboard
(127.0.0.1:6070, on by default); each one moves with its flag or turns off with the value off.

Usage:
  ratekeeper serve --config PATH [options]

Options (environment variable used when the flag is absent):
  --config PATH            a YAML file or a directory of *.yaml        RATEKEEPER_CONFIG, else
                           (envoyproxy/ratelimit's YAML, plus policies)  $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config
  --host HOST              the address both listeners bind             HOST                    default: 127.0.0.1
  --port N                 HTTP port (off: no HTTP listener)            PORT                    default: 8080
  --grpc-port N            gRPC port (off: no gRPC listener)            GRPC_PORT               default: 8081
  --redis URL              Redis: redis://host:port, rediss://… (TLS) or host:port
                           (user:password@ in the URL)                 REDIS_URL (with REDIS_TYPE=single)
  --redis-cluster URLS     Redis Cluster: some nodes, comma-separated  REDIS_URL (with REDIS_TYPE=cluster)
                           (none of these: the embedded memory store, for one instance)
${REDIS_HELP}  --prefix TEXT            Redis key prefix                            CACHE_KEY_PREFIX        default: rk:
  --on-store-error MODE    when Redis fails: deny, allow, or memory    RATEKEEPER_ON_STORE_ERROR  default: memory
                           (decide on a local memory store until Redis answers again)
  --store-timeout MS       ms a Redis call may take                    RATEKEEPER_STORE_TIMEOUT   default: 1000
  --max-keys N             clients kept by the memory store (and the fallback)                 default: 1000000
  --request-timeout MS     ms a request may take to arrive whole, on both listeners (HTTP: 408;
                           gRPC: DEADLINE_EXCEEDED and the stream reset) RATEKEEPER_REQUEST_TIMEOUT default: 10000
  --grpc-max-streams N     calls one gRPC connection may have open at once
                                                                       RATEKEEPER_GRPC_MAX_STREAMS default: 1000
  --response-headers       add RateLimit-Policy, RateLimit and Retry-After to RLS responses
                                                                       RATE_LIMIT_RESPONSE_HEADERS_ENABLED=true
  --shadow-mode            decide and count, never refuse              SHADOW_MODE=true
  --denial-cache           answer a just-refused client locally until its retryAfter (Redis)
  --health-check-store     /healthcheck answers 500 while a Redis server (a Cluster master) does not answer
                           (off: 200, the body names it)               REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true
  --metrics-max-series N   metric keys made of request values (detailed_metric, value_to_metric) counted
                           apart; past N new ones count as limit="(overflow)"
                                                                       RATEKEEPER_METRICS_MAX_SERIES  default: 1000
  --admin-port N           the operators' view: admin API and dashboard (off: none)
                           (on by default, loopback only: --admin-port off turns it off)
                                                                       RATEKEEPER_ADMIN_PORT   default: 6070
  --admin-host HOST        where the admin listener binds              RATEKEEPER_ADMIN_HOST   default: 127.0.0.1
  --admin-token TOKEN      the admin API's bearer token (required off loopback; >= 16 characters)
                                                                       RATEKEEPER_ADMIN_TOKEN
  --admin-allowed-hosts H  comma-separated Host names the admin listener answers besides its own address
                           (name or name:port; others get 421)          RATEKEEPER_ADMIN_ALLOWED_HOSTS
  --admin-max-event-clients N  live tails open at once (503 past it)   RATEKEEPER_ADMIN_MAX_EVENT_CLIENTS   default: 64
  --grpc-reflection on|off gRPC server reflection (grpcurl list/describe); grpc.health.v1 is always on
                                                                       RATEKEEPER_GRPC_REFLECTION  default: on
  --help, -h               this text

Logs:
  --log-level LEVEL        debug, info, warn or error                  LOG_LEVEL               default: info
  --log-format FORMAT      text, or json: one object per line with @timestamp, level, @message and fields
                                                                       LOG_FORMAT              default: text
  --log-keys MODE          client keys in logs and the admin's live tail: plain, hash (sha256: + 12 hex)
                           or redact (the admin API keeps them)        RATEKEEPER_LOG_KEYS     default: plain
  --log-keys-secret TEXT   makes hash an HMAC (guessable keys: IPs, ids) RATEKEEPER_LOG_KEYS_SECRET


TLS (every listener takes the --tls-* files unless it has its own --http-tls-*, --grpc-tls-* or --admin-tls-*;
--<listener>-tls-cert off keeps that listener plain, --<listener>-tls-client-ca off drops mTLS there; the files
are re-read when they change, a Kubernetes Secret's symlink swap included: new connections get the new certificate,
open ones keep theirs, and a bad new file keeps the previous certificate and is logged):
  --tls-cert FILE          the server's certificate chain (PEM)        RATEKEEPER_TLS_CERT
  --tls-key FILE           its private key (PEM, unencrypted)          RATEKEEPER_TLS_KEY
  --tls-client-ca FILE     mTLS: clients must present a certificate signed by one of these CAs (PEM),
                           else they are refused at the handshake     RATEKEEPER_TLS_CLIENT_CA
  --tls-client-san NAME    mTLS: … whose subjectAltName names NAME (a DNS name or an IP)
                                                                       RATEKEEPER_TLS_CLIENT_SAN
  --http-tls-cert FILE, --http-tls-key FILE, --http-tls-client-ca FILE, --http-tls-client-san NAME
  --admin-tls-cert FILE, --admin-tls-key FILE, --admin-tls-client-ca FILE, --admin-tls-client-san NAME
  --grpc-tls-cert FILE, --grpc-tls-key FILE, --grpc-tls-client-ca FILE, --grpc-tls-client-san NAME
                           envoyproxy/ratelimit's names for the gRPC listener: GRPC_SERVER_USE_TLS=true with
                           GRPC_SERVER_TLS_CERT, GRPC_SERVER_TLS_KEY, GRPC_CLIENT_TLS_CACERT, GRPC_CLIENT_TLS_SAN

The configuration is reloaded within a second of a change (a Kubernetes ConfigMap's symlink swap included); a bad
one is rejected whole, logged and counted, and the previous one keeps serving. SIGTERM and SIGINT stop accepting
calls, answer those in flight, and exit 0.
`;

export const CONFIG_HELP = `ratekeeper config check — validates a configuration without serving it

Usage:
  ratekeeper config check PATH      a YAML file or a directory of *.yaml

Prints a summary and exits 0, or prints every error (file, descriptor path, field and value) and exits 1.
`;
