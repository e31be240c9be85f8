// argon2id through Bun.password (Bun's defaults: 64 MiB, t=2). Unknown e-mails are checked
// against a dummy hash so that login takes as long whether or not the account exists.
export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 256

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id' })
}

let dummyHash: Promise<string> | undefined

/** Verifies `password` against `hash`, or against a dummy hash (always false) when there is none. */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  if (hash !== undefined) return Bun.password.verify(password, hash)
  dummyHash ??= hashPassword(crypto.randomUUID())
  await Bun.password.verify(password, await dummyHash)
  return false
}
