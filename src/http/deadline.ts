// Waiting on a client with a time limit. Bun's idleTimeout fires only after silence, so a client
// trickling a byte every few hundred milliseconds would hold a request open as long as it liked:
// the body readers (body.ts, upload.ts) bound each wait themselves.

export const LATE = Symbol('late')

/** What `promise` settles to, or LATE if it has not within `ms` (the promise is left running). */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: Timer | undefined
  const late = new Promise<typeof LATE>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms), LATE)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}
