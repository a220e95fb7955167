/** The part of autocannon's API that bench/http.ts uses (the package ships no types). */
declare module 'autocannon' {
  export interface Stat { average: number; mean: number; stddev: number; p50: number; p99: number; total: number }
  export interface Result { requests: Stat; latency: Stat; non2xx: number; errors: number; timeouts: number; '2xx': number }
  export interface Request { method?: string; path?: string; headers?: Record<string, string>; setupRequest?: (req: Request, context: Record<string, unknown>) => Request }
  export interface Options { url: string; connections?: number; pipelining?: number; duration?: number; workers?: number; requests?: Request[]; headers?: Record<string, string> }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
