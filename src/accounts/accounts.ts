// Accounts and sessions: register, login, refresh, logout, profiles, and the session half of
// the bearer check. Routes are thin wrappers around these methods; tests call them directly too.
import type { Sql } from 'postgres'
import type { EventBus } from '../db/events.ts'
import { HttpError } from '../http/errors.ts'
import { requireSessionToken, type Authenticator, type Principal } from '../http/auth.ts'
import type { PageKey } from '../db/pages.ts'
import type { Db } from '../db/sql.ts'
import type { Logger } from '../log.ts'
import type { PasswordCost } from '../config.ts'
import type { RegistrationMode } from '../config-variables.ts'
import { consumeInvitation, invitationValid } from './invitations.ts'
import { hashPassword, needsRehash, PASSWORD_MAX, PASSWORD_MIN, verifyPassword } from './passwords.ts'
import {
  RevokedSessions,
  SESSION_REVOKED,
  endSession,
  endUserSessions,
  insertSession,
  listLiveSessions,
  markRevoked,
  rotateRefreshToken,
} from './sessions.ts'
import { createSessionTokens, type SessionTokens } from './tokens.ts'
import {
  findCredentials,
  findUserById,
  findUserIdByEmail,
  insertUser,
  listUsers,
  normalizeEmail,
  replacePasswordHash,
  updateUser,
} from './users.ts'
import { ExpiringMap } from '../expiring.ts'
import type { SessionGrant, SessionSummary, User } from './schemas.ts'

export interface AccountsOptions {
  system: Sql
  bus: EventBus
  log: Logger
  jwtSecret: string
  issuer: string
  /** Named in the 401 challenge (RFC 9728): the OAuth protected-resource metadata of the service. */
  resourceMetadataUrl: string
  accessTokenTtl: number
  sessionTtl: number
  /** argon2id's cost of new hashes; a stored hash of another is re-hashed at the next sign-in. */
  passwordCost: PasswordCost
  /** Seconds a session may go without a refresh (SESSION_IDLE_TTL); undefined: no limit. */
  sessionIdleTtl?: number
  /** Re-read revocations periodically (several instances share the database). */
  catchUp: boolean
  /** Who may register (REGISTRATION); accounts made by a sysadmin or the CLI are not affected. */
  registration: RegistrationMode
  /** Runs after an account is created (grants the default role). */
  onUserCreated(userId: string): Promise<unknown>
}

const USER_CHANGED = 'kgs_user_changed'
const USER_CACHE_TTL_MS = 30_000
const USER_CACHE_SIZE = 10_000

/** A registration the REGISTRATION setting refuses (403): each says how to get an account instead. */
const REGISTRATION_CLOSED =
  'registration is closed: an administrator creates accounts (`kgs user create`, or POST /api/v1/admin/users)'
const INVITATION_NEEDED =
  'registration is by invitation: ask an administrator for an invitation code for your e-mail address, and register with it'
const INVITATION_INVALID =
  'registration is by invitation: this invitation code is not open for this e-mail address (unknown, expired, already used, or made for another address)'

/** What a registration carries: `invitation` is the code a sysadmin gave, where REGISTRATION=invite. */
export interface Registration {
  email: string
  password: string
  name?: string
  invitation?: string
}

const invalidCredentials = () => new HttpError(401, 'invalid credentials')
const invalidRefreshToken = () => new HttpError(401, 'invalid refresh token')

function requireEmail(email: string): string {
  const normalized = normalizeEmail(email)
  if (!normalized) throw new HttpError(400, 'invalid body: email: expected an e-mail address')
  return normalized
}

export class Accounts implements Authenticator {
  readonly tokens: SessionTokens
  readonly revoked: RevokedSessions
  readonly resourceMetadataUrl: string
  private readonly sql: Sql
  /**
   * Profiles read on every authenticated request (GET /users/me) are served from memory. Changes
   * evict the entry here and, through the bus, on every other instance; the TTL bounds how stale
   * an entry can be if an instance ever misses a notification.
   */
  private readonly users = new ExpiringMap<string, User>(USER_CACHE_SIZE)

  private constructor(private readonly options: AccountsOptions) {
    this.sql = options.system
    this.resourceMetadataUrl = options.resourceMetadataUrl
    this.tokens = createSessionTokens({
      secret: options.jwtSecret,
      issuer: options.issuer,
      ttlSeconds: options.accessTokenTtl,
    })
    this.revoked = new RevokedSessions(options.system, options.accessTokenTtl, options.log)
  }

  static async start(options: AccountsOptions): Promise<Accounts> {
    const accounts = new Accounts(options)
    await accounts.revoked.start(options.bus, options.catchUp)
    await options.bus.subscribe(USER_CHANGED, (userId) => accounts.users.delete(userId))
    return accounts
  }

  stop(): void {
    this.revoked.stop()
  }

  get registration(): RegistrationMode {
    return this.options.registration
  }

  /** A self-registration (POST /auth/register), if REGISTRATION allows it: the account and a session. */
  async register(input: Registration): Promise<SessionGrant> {
    return this.startSession(await this.signUp(input))
  }

  /**
   * Makes the account a person asks for, as REGISTRATION allows: 403 when closed, or by invitation
   * without a code open for this address. The invitation is used up with the account's insert.
   */
  async signUp(input: Registration): Promise<User> {
    const mode = this.options.registration
    if (mode === 'closed') throw new HttpError(403, REGISTRATION_CLOSED)
    const email = requireEmail(input.email)
    if (mode === 'open') return this.createAccount({ ...input, email })
    const code = input.invitation?.trim()
    if (!code) throw new HttpError(403, INVITATION_NEEDED)
    // Checked before the password is hashed, and again when it is used.
    if (!(await invitationValid(this.sql, email, code))) throw new HttpError(403, INVITATION_INVALID)
    return this.createAccount({ ...input, email }, async (tx) => {
      if (!(await consumeInvitation(tx, email, code))) throw new HttpError(403, INVITATION_INVALID)
    })
  }

  /**
   * Makes an account whatever REGISTRATION says (a sysadmin's doing, or a registration it
   * allowed): a member of the system domain. `within` runs in the insert's transaction.
   */
  async createAccount(
    input: { email: string; password: string; name?: string },
    within?: (tx: Db) => Promise<void>,
  ): Promise<User> {
    const email = requireEmail(input.email)
    if (input.password.length < PASSWORD_MIN || input.password.length > PASSWORD_MAX)
      throw new HttpError(
        400,
        `invalid body: password: expected a password of ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`,
      )
    const passwordHash = await hashPassword(input.password, this.options.passwordCost)
    const user = await this.sql.begin(async (tx) => {
      await within?.(tx)
      return insertUser(tx, { email, name: input.name?.trim() ?? '', passwordHash })
    })
    await this.options.onUserCreated(user.id)
    return user
  }

  async login(input: { email: string; password: string }): Promise<SessionGrant> {
    const user = await this.verifyCredentials(input.email, input.password)
    if (!user) throw invalidCredentials()
    return this.startSession(user)
  }

  /** The account these credentials open, or undefined (in the same time whether or not it exists). */
  async verifyCredentials(email: string, password: string): Promise<User | undefined> {
    const normalized = normalizeEmail(email)
    const account = normalized ? await findCredentials(this.sql, normalized) : undefined
    // Unknown accounts are verified against a dummy hash: the answer takes as long either way.
    if (!(await verifyPassword(password, account?.password_hash, this.options.passwordCost)) || !account)
      return undefined
    const { password_hash: storedHash, ...user } = account
    if (needsRehash(storedHash, this.options.passwordCost)) await this.rehash(user.id, password, storedHash)
    return user
  }

  /**
   * Stores the password at the configured cost (docs/spec/decisions.md §3): changing the cost
   * needs no migration. The sign-in succeeds whatever happens here; a failure (the hashing queue
   * full) leaves the old hash, to be replaced at a later sign-in.
   */
  private async rehash(userId: string, password: string, storedHash: string): Promise<void> {
    try {
      await replacePasswordHash(this.sql, userId, storedHash, await hashPassword(password, this.options.passwordCost))
    } catch (error) {
      this.options.log.warn('password not re-hashed at the configured cost; kept as it was', {
        user_id: userId,
        error: (error as Error).message,
      })
    }
  }

  private async startSession(user: User): Promise<SessionGrant> {
    const session = await insertSession(this.sql, user.id, this.options.sessionTtl)
    return {
      user,
      token: await this.accessToken(user.id, session.sessionId, session.expiresAt),
      refresh_token: session.refreshToken,
    }
  }

  /** An access token never outlives its session. */
  private accessToken(userId: string, sessionId: string, sessionExpiresAt: Date): Promise<string> {
    return this.tokens.issue(userId, sessionId, Math.floor(sessionExpiresAt.getTime() / 1000))
  }

  async refresh(refreshToken: string): Promise<{ token: string; refresh_token: string }> {
    const rotation = await rotateRefreshToken(this.sql, refreshToken, this.options.sessionIdleTtl)
    if (rotation.outcome === 'reused' || rotation.outcome === 'idle') {
      this.revoked.add(rotation.sessionId)
      await this.options.bus.publish(this.sql, SESSION_REVOKED, rotation.sessionId)
    }
    if (rotation.outcome === 'reused')
      this.options.log.warn('refresh token reused; session revoked', { session_id: rotation.sessionId })
    if (rotation.outcome === 'idle')
      throw new HttpError(401, 'the session went unused longer than SESSION_IDLE_TTL; sign in again')
    if (rotation.outcome !== 'rotated') throw invalidRefreshToken()
    return {
      token: await this.accessToken(rotation.userId, rotation.sessionId, rotation.expiresAt),
      refresh_token: rotation.refreshToken,
    }
  }

  async logout(principal: Principal): Promise<void> {
    if (!principal.sessionId)
      throw new HttpError(400, 'not a session token; revoke OAuth tokens at /api/v1/oauth/revoke')
    this.revoked.add(principal.sessionId)
    await this.sql.begin(async (tx) => {
      if (await markRevoked(tx, principal.sessionId!, 'logout'))
        await this.options.bus.publish(tx, SESSION_REVOKED, principal.sessionId!)
    })
  }

  /** The user's live sessions, oldest first (one page). */
  listSessions(userId: string, limit: number, after?: PageKey) {
    return listLiveSessions(this.sql, userId, limit, after, this.options.sessionIdleTtl)
  }

  /** Ends one of the user's live sessions (the current one too): its tokens stop working at once. */
  async endSession(userId: string, sessionId: string): Promise<SessionSummary> {
    const ended = await this.sql.begin(async (tx) => {
      const session = await endSession(tx, userId, sessionId)
      if (session) await this.options.bus.publish(tx, SESSION_REVOKED, session.id)
      return session
    })
    if (!ended) throw new HttpError(404, 'session not found')
    this.revoked.add(ended.id)
    return ended
  }

  /** Ends every live session of `userId` (an administrator's doing); how many there were. */
  async endUserSessions(userId: string): Promise<number> {
    const ended = await this.sql.begin(async (tx) => {
      const ids = await endUserSessions(tx, userId)
      for (const id of ids) await this.options.bus.publish(tx, SESSION_REVOKED, id)
      return ids
    })
    for (const id of ended) this.revoked.add(id)
    return ended.length
  }

  async authenticate(token: string): Promise<Principal | undefined> {
    const claims = await this.tokens.verify(token)
    if (!claims || this.revoked.has(claims.sid)) return undefined
    return { userId: claims.sub, sessionId: claims.sid }
  }

  /** A user by id, from memory when recently seen. */
  async findUser(userId: string): Promise<User | undefined> {
    const cached = this.users.get(userId)
    if (cached) return cached
    const user = await findUserById(this.sql, userId)
    if (user) this.users.set(user.id, user, Date.now() + USER_CACHE_TTL_MS)
    return user
  }

  /** A user; 404 when there is none. */
  async getUser(userId: string): Promise<User> {
    const user = await this.findUser(userId)
    if (!user) throw new HttpError(404, 'user not found')
    return user
  }

  /**
   * ASVS 7.5.1: the sign-in e-mail is a credential, changed only with a session token and the
   * acting user's current password. An OAuth client never changes credentials, whatever its
   * scope: a stolen or over-trusted token must not be able to take the account over.
   */
  private async reauthenticate(principal: Principal, currentPassword: string | undefined): Promise<void> {
    requireSessionToken(principal, 'sign-in credentials')
    if (currentPassword === undefined)
      throw new HttpError(400, 'invalid body: current_password: required to change the e-mail')
    const actor = await this.findUser(principal.userId)
    if (!actor || !(await this.verifyCredentials(actor.email, currentPassword)))
      throw new HttpError(403, 'current_password is wrong')
  }

  /** The account of a normalized e-mail address, if there is one. */
  async findUserByEmail(email: string): Promise<User | undefined> {
    const userId = await findUserIdByEmail(this.sql, email)
    return userId ? this.findUser(userId) : undefined
  }

  async userExists(userId: string): Promise<boolean> {
    return (await this.findUser(userId)) !== undefined
  }

  /** A page of users; `search`: only those whose e-mail or name contains it (any case). */
  listUsers(limit: number, after?: PageKey, search?: string) {
    return listUsers(this.sql, limit, after, search)
  }

  /** Changes a profile for `principal`, authorized to change it; an e-mail change needs its password too. */
  async updateUser(
    principal: Principal,
    userId: string,
    changes: { name?: string; email?: string; current_password?: string },
  ): Promise<User> {
    const existing = await this.getUser(userId)
    const email = changes.email === undefined ? undefined : requireEmail(changes.email)
    if (email !== undefined && email !== existing.email) await this.reauthenticate(principal, changes.current_password)
    const updated = await this.sql.begin(async (tx) => {
      const user = await updateUser(tx, userId, { name: changes.name?.trim(), email })
      if (!user) throw new HttpError(404, 'user not found')
      await this.options.bus.publish(tx, USER_CHANGED, userId)
      return user
    })
    this.users.delete(userId)
    return updated
  }
}
