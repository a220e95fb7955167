/**
 * arrivals — the gRPC listener's deadline for a call's request to arrive whole: the HTTP/2 streams still waiting for
 * their client's end of stream, swept on a timer, the expired ones handed back to the listener (which answers
 * DEADLINE_EXCEEDED and resets them). grpc-js has no such deadline (a call's only one is the client's grpc-timeout),
 * so it lives on node:http2's streams, under grpc-js.
 */
import type * as http2 from 'node:http2';

/**
 * Arrivals — the streams whose request has not arrived whole, by the sweep tick they opened in (a Map keeps insertion
 * order, so the oldest come first and a sweep stops at the first young one).
 */
export class Arrivals {
  /** open — stream → the tick it opened in; a stream leaves at its client's end of stream or when it closes. */
  private readonly open = new Map<http2.ServerHttp2Stream, number>();
  /** tick — sweeps so far: the clock of `open`, read without a clock call per stream. */
  private tick = 0;
  private readonly timer: NodeJS.Timeout;
  /** arrived — a stream's 'end' and 'close' listener (one function for every stream: `this` is the stream). */
  readonly arrived: (this: http2.ServerHttp2Stream) => void;

  constructor(timeoutMs: number, private readonly onExpired: (stream: http2.ServerHttp2Stream) => void) {
    const open = this.open;
    this.arrived = function (this: http2.ServerHttp2Stream) {
      open.delete(this);
    };
    const every = Math.max(50, Math.min(1000, timeoutMs / 4));
    const ticks = Math.ceil(timeoutMs / every);
    this.timer = setInterval(() => this.sweep(ticks), every);
    this.timer.unref();
  }

  /** add — a new stream, from the HTTP/2 server's 'stream' event. */
  readonly add = (stream: http2.ServerHttp2Stream): void => {
    this.open.set(stream, this.tick);
    stream.on('end', this.arrived);
    stream.on('close', this.arrived);
  };

  private sweep(ticks: number): void {
    this.tick++;
    for (const [stream, opened] of this.open) {
      if (this.tick - opened <= ticks) break;
      this.open.delete(stream);
      this.onExpired(stream);
    }
  }

  get size(): number {
    return this.open.size;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
