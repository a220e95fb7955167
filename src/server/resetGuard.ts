import * as http2 from 'node:http2';

/**
 * MAX_RESETS — streams a client may reset before the server answered them, per connection and per RESET_WINDOW_MS,
 * before the connection is sent GOAWAY (ENHANCE_YOUR_CALM) and closed. A proxy cancels a rate-limit call only when
 * its own client went away (a few a second on a busy connection; 100 in a second is far past that); HTTP/2 rapid reset (CVE-2023-44487) resets
 * every stream it opens, thousands a second, and each one costs the server the call's setup (grpc-js parses its
 * headers and starts a call) before the reset is read. nghttp2's own bound (a burst of 1 000, then 33 a second)
 * let about 1 700 such streams through per connection here, ~1 s of event loop that every other client waited for.
 */
export const MAX_RESETS = 100;
/** RESET_WINDOW_MS — the window MAX_RESETS counts in, ms. */
export const RESET_WINDOW_MS = 1000;

/** Count — one connection's resets in the current window. */
interface Count {
  n: number;
  /** since — ms (performance.now) when the window began. */
  since: number;
}

/**
 * ResetGuard — counts, per HTTP/2 connection, the streams its client reset before they were answered (a stream's
 * 'aborted' event: closed by the peer while its response was not ended), and closes a connection past MAX_RESETS in
 * RESET_WINDOW_MS with GOAWAY ENHANCE_YOUR_CALM, destroying it: the frames it sent after are never read, its open
 * calls are cancelled (charging nothing), and the client must open a new connection to go on.
 */
export class ResetGuard {
  /** closed — connections closed for resetting too many streams. */
  closed = 0;
  private readonly counts = new WeakMap<http2.Http2Session, Count>();

  constructor(private readonly maxResets = MAX_RESETS, private readonly windowMs = RESET_WINDOW_MS) {}

  /** add — a new stream, from the HTTP/2 server's 'stream' event: its reset before an answer is counted. */
  readonly add = (stream: http2.ServerHttp2Stream): void => {
    stream.once('aborted', this.aborted);
  };

  /** aborted — one function for every stream (`this` is the stream, `guard` this guard). */
  private readonly aborted = ((guard: ResetGuard) =>
    function (this: http2.ServerHttp2Stream): void {
      guard.count(this.session);
    })(this);

  private count(session: http2.Http2Session | undefined): void {
    if (session === undefined || session.closed || session.destroyed) return;
    const now = performance.now();
    let c = this.counts.get(session);
    if (c === undefined || now - c.since > this.windowMs) {
      c = { n: 0, since: now };
      this.counts.set(session, c);
    }
    if (++c.n <= this.maxResets) return;
    this.closed++;
    // destroyed at once, not closed gracefully: its open streams are cancelled before they are decided (a graceful
    // close let the calls whose reset was still unread be decided and charged: 700 of 3 000 against 150)
    try {
      session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    } finally {
      session.destroy();
    }
  }
}
