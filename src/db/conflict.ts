// A write that would duplicate a unique value (a repository's slug, a user's e-mail address).
// Stores throw it; the HTTP layer answers 409 with its message (http/errors.ts), the admin CLI
// prints it.
export class ConflictError extends Error {}

/** Whether `error` is PostgreSQL's unique_violation (SQLSTATE 23505). */
export const isUniqueViolation = (error: unknown) => (error as { code?: unknown } | null)?.code === '23505'

/** Rethrows a unique violation as a ConflictError saying `message`, and anything else as it is. */
export function rethrowUnique(error: unknown, message: string): never {
  if (isUniqueViolation(error)) throw new ConflictError(message)
  throw error
}
