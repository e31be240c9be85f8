// A map whose entries carry a deadline and disappear once it has passed: the shape of every
// in-memory cache and revocation set of the service (verified tokens, profiles, repositories,
// revoked sessions, token families and access tokens). Optionally bounded: at the bound the
// oldest entry gives way (a Map iterates in insertion order).
export class ExpiringMap<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>()

  constructor(private readonly maxEntries = Infinity) {}

  /** The value, if its deadline is still ahead. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    if (entry.until > Date.now()) return entry.value
    this.entries.delete(key)
    return undefined
  }

  has(key: K): boolean {
    return this.get(key) !== undefined
  }

  /** `until`: milliseconds since the epoch. */
  set(key: K, value: V, until: number): void {
    this.entries.delete(key)
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(key, { value, until })
  }

  delete(key: K): void {
    this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
  }

  /** Drops every entry whose deadline has passed (reads drop them one at a time anyway). */
  prune(): void {
    const now = Date.now()
    for (const [key, entry] of this.entries) if (entry.until <= now) this.entries.delete(key)
  }
}
