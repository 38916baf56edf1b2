// Condition-based waiting helpers for tests. Replace arbitrary timeouts with a wait for the
// state the test actually needs.

export async function waitFor<T>(
  condition: () => T | undefined | null | false,
  description: string,
  timeoutMs = 5000,
  intervalMs = 10,
): Promise<T> {
  const start = Date.now();
  for (;;) {
    const result = condition();
    if (result) return result;
    if (Date.now() - start > timeoutMs) {
      throw new Error(`Timeout waiting for ${description} after ${timeoutMs}ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export function waitForEvent<E extends { type: string }>(
  events: () => E[],
  type: string,
  timeoutMs = 5000,
): Promise<E> {
  return waitFor(() => events().find((e) => e.type === type), `event ${type}`, timeoutMs);
}

export function waitForEventCount<E extends { type: string }>(
  events: () => E[],
  type: string,
  count: number,
  timeoutMs = 5000,
): Promise<E[]> {
  return waitFor(
    () => {
      const matching = events().filter((e) => e.type === type);
      return matching.length >= count ? matching : undefined;
    },
    `${count} ${type} events`,
    timeoutMs,
  );
}
