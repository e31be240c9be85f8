// Promises in assertions: await first, then expect. bun:test's promise matchers
// (`expect(p).resolves…`, `expect(p).rejects…`) wait for the promise in a nested turn of the event
// loop that, when they run inside a setImmediate callback, holds back the rest of that batch of
// immediates until the promise settles (oven-sh/bun#39103). A server running in the test's
// process has its own immediates in that batch (postgres.js sends its writes from one): its
// requests then stalled until the awaited promise timed out, 30 s for a Playwright locator.
// `.ci/run` refuses the matchers in tests/.

/** What `promise` rejects with; the test fails if it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (reason) {
    return reason
  }
  throw new Error('expected the promise to reject, and it resolved')
}

/** `promise`'s rejection as a function that throws it, for toThrow: `expect(await rejected(p)).toThrow('…')`. */
export async function rejected(promise: Promise<unknown>): Promise<() => never> {
  const reason = await rejectionOf(promise)
  return () => {
    throw reason
  }
}
