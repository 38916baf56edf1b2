// Minimal fetch wrapper with a latency measurement.
export async function timedFetch(url, { token, method = "GET" } = {}) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const t0 = performance.now();
  const res = await fetch(url, { method, headers });
  return { status: res.status, ms: Math.round(performance.now() - t0) };
}
