// A pool of at most `concurrency` calls in flight: each of `concurrency` loops takes the next item
// when its call ends, so the items start in their order and never more run at once.

/** Calls `work` on every item, at most `concurrency` at a time; rejects with the first failure. */
export async function eachBounded<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0
  const loop = async () => {
    while (next < items.length) {
      const index = next++
      await work(items[index]!, index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), items.length) }, loop))
}
