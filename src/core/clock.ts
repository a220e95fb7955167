/**
 * anchoredClock — a clock that reads a monotonic source (`monotonic`, ms from an arbitrary origin) anchored once to
 * wall time (`wall`, ms since the epoch): it starts at the wall time and then advances exactly as the monotonic source
 * does, so a step of the wall clock (an NTP correction, a VM resumed, an operator's `date -s`) neither freezes nor
 * jumps it, while the times it gives stay comparable to epoch ms (state kept in memory decides as it would have).
 * @example anchoredClock(Date.now, () => performance.now())
 */
export function anchoredClock(wall: () => number, monotonic: () => number): () => number {
  const anchor = wall() - monotonic();
  return () => anchor + monotonic();
}

/** localClock — the process's own anchored clock: Date.now() at the first use, advanced by performance.now(). */
export const localClock: () => number = anchoredClock(Date.now, () => performance.now());
