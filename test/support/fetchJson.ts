/** fetchJson — a fetch whose answer body is parsed as JSON (undefined when empty), for the service's and the admin's APIs. */
export async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
}
