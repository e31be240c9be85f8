// Profiles read on every authenticated request (GET /users/me) are served from memory. Changes
// evict the entry here and, through the event bus, on every other instance; the TTL bounds how
// stale an entry can be if an instance ever misses a notification.
import type { User } from './users.ts'

export const USER_CHANGED = 'kgs_user_changed'

const TTL_MS = 30_000
const MAX_ENTRIES = 10_000

export class UserCache {
  private readonly entries = new Map<string, { user: User; until: number }>()

  get(id: string): User | undefined {
    const entry = this.entries.get(id)
    if (!entry) return undefined
    if (entry.until > Date.now()) return entry.user
    this.entries.delete(id)
    return undefined
  }

  set(user: User): void {
    // Map iteration order is insertion order: the first key is the oldest entry.
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(user.id, { user, until: Date.now() + TTL_MS })
  }

  evict(id: string): void {
    this.entries.delete(id)
  }
}
