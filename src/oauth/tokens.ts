// The token endpoint's grants and the OAuth half of the bearer check.
// Access tokens: HS256 JWTs per RFC 9068 (typ at+jwt; iss, sub, aud, client_id, scope, jti, iat,
// exp), signed and verified by http/tokens.ts. Refresh tokens: opaque, SHA-256 at rest, rotated on use within a
// family per authorization code; reuse of a rotated token or of the code revokes the family. A
// family lives GRANT_SECONDS from the consent, however often its refresh token rotates.
// Revoked families and access tokens are held in memory (no database round trip per request),
// fed by the event bus and a periodic catch-up, like revoked sessions.
import { runtime } from '../runtime/index.ts'
import { accessTokenCodec } from '../http/tokens.ts'
import type { Sql } from 'postgres'
import { createHash, randomBytes } from 'node:crypto'
import { refreshIdle } from '../accounts/idle.ts'
import type { EventBus } from '../db/events.ts'
import { ExpiringMap } from '../expiring.ts'
import type { Db } from '../db/sql.ts'
import { OAuthError } from './errors.ts'
import type { Principal } from '../http/auth.ts'
import type { PageKey } from '../db/pages.ts'
import type { Logger } from '../log.ts'
import { describeError } from '../log.ts'
import type { Client } from './clients.ts'
import { GRANT_SECONDS } from './consent.ts'
import { listLiveGrants, revokeAllGrants, revokeGrant, revokeGrantOfRefreshToken, type GrantFilter } from './grants.ts'
import type { GrantSummary } from './schemas.ts'
import { resourceIdentifiers } from './metadata.ts'

const OAUTH_REVOKED = 'kgs_oauth_revoked'
const CATCH_UP_MS = 5_000
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

const digest = (secret: string) => createHash('sha256').update(secret).digest()
const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description)

export interface TokenResponse {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token?: string
  scope: string
}

/** The web app's sign-in in a browser (app-session.ts): what its grant records, and the grant it replaces. */
export interface AppBrowser {
  /** browserSummary of the request's User-Agent. */
  summary: string
  /** The digest of the authorization pages' sign-in the browser sent: it ends with the grant. */
  pagesSignIn: Buffer | undefined
  /** The refresh token of the grant the browser held until now, if any: that grant is revoked. */
  replacing: string | undefined
}

export interface OAuthTokensOptions {
  system: Sql
  bus: EventBus
  log: Logger
  secret: string
  issuer: string
  accessTokenTtl: number
  /** Seconds a grant may go without a refresh (SESSION_IDLE_TTL); undefined: no limit. */
  grantIdleTtl?: number
  catchUp: boolean
}

export class OAuthTokens {
  private readonly revokedFamilies = new ExpiringMap<string, true>()
  private readonly revokedTokens = new ExpiringMap<string, true>()
  private readonly codec: ReturnType<typeof accessTokenCodec>
  private timer: Timer | undefined
  private watermark = new Date(0)

  private constructor(private readonly options: OAuthTokensOptions) {
    this.codec = accessTokenCodec({
      secret: options.secret,
      issuer: options.issuer,
      audiences: resourceIdentifiers(options.issuer),
    })
  }

  static async start(options: OAuthTokensOptions): Promise<OAuthTokens> {
    const tokens = new OAuthTokens(options)
    await options.bus.subscribe(
      OAUTH_REVOKED,
      () =>
        void tokens
          .catchUp()
          .catch((error) => options.log.warn('oauth revocation catch-up failed', describeError(error))),
    )
    await tokens.catchUp()
    if (options.catchUp) {
      tokens.timer = setInterval(
        () =>
          void tokens
            .catchUp()
            .catch((error) => options.log.warn('oauth revocation catch-up failed', describeError(error))),
        CATCH_UP_MS,
      )
      runtime.unref(tokens.timer)
    }
    return tokens
  }

  stop(): void {
    clearInterval(this.timer)
  }

  /** Re-reads revocations recent enough to matter (within one access-token lifetime). */
  private async catchUp(): Promise<void> {
    const ttl = this.options.accessTokenTtl
    const since = this.watermark
    const [families, tokens, [clock]] = await Promise.all([
      this.options.system<
        { id: string }[]
      >`SELECT id FROM oauth_token_families WHERE revoked_at >= greatest(${since}::timestamptz - interval '1 minute', now() - make_interval(secs => ${ttl}))`,
      this.options.system<
        { jti: string; expires_at: Date }[]
      >`SELECT jti, expires_at FROM oauth_revoked_access_tokens WHERE expires_at > now()`,
      this.options.system<{ now: Date }[]>`SELECT now() AS now`,
    ])
    this.markRevoked(families.map((f) => f.id))
    for (const { jti, expires_at } of tokens) this.revokedTokens.set(jti, true, expires_at.getTime())
    this.watermark = clock!.now
    this.revokedFamilies.prune()
    this.revokedTokens.prune()
  }

  private async issue(
    db: Db,
    family: { id: string; client_id: string; user_id: string; resource: string },
    scope: string,
    withRefresh: boolean,
  ): Promise<TokenResponse> {
    const ttl = this.options.accessTokenTtl
    const access = await this.codec.sign({
      sub: family.user_id,
      aud: family.resource,
      client_id: family.client_id,
      scope,
      jti: crypto.randomUUID(),
      fam: family.id,
      exp: Math.floor(Date.now() / 1000) + ttl,
    })
    // Clients that stop getting tokens are purged in time (purgeEndedOAuthRows).
    await db`UPDATE oauth_clients SET last_used_at = now() WHERE id = ${family.client_id}`
    let refresh: string | undefined
    if (withRefresh) {
      refresh = randomBytes(32).toString('base64url')
      await db`INSERT INTO oauth_refresh_tokens (token_hash, family_id, scope) VALUES (${digest(refresh)}, ${family.id}, ${scope})`
    }
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: ttl,
      ...(refresh ? { refresh_token: refresh } : {}),
      scope,
    }
  }

  /**
   * authorization_code grant (RFC 6749 §4.1.3 with RFC 7636). Exactly one exchange of a code
   * succeeds. With `browser` (the web app), the new grant replaces the one the browser held.
   */
  async exchangeCode(
    client: Client,
    params: { code?: string; redirect_uri?: string; code_verifier?: string; resource?: string },
    browser?: AppBrowser,
  ): Promise<TokenResponse> {
    if (!params.code) throw new OAuthError(400, 'invalid_request', 'code is required')
    if (!params.redirect_uri) throw new OAuthError(400, 'invalid_request', 'redirect_uri is required')
    if (!params.code_verifier) throw new OAuthError(400, 'invalid_request', 'code_verifier is required (PKCE)')
    if (!VERIFIER.test(params.code_verifier))
      throw new OAuthError(400, 'invalid_request', 'code_verifier must be 43 to 128 characters of [A-Za-z0-9._~-]')
    const codeHash = digest(params.code)
    const outcome = await this.options.system.begin(async (tx) => {
      const [code] = await tx<
        {
          client_id: string
          user_id: string
          redirect_uri: string
          scope: string
          code_challenge: string
          resource: string
          fresh: boolean
        }[]
      >`
        UPDATE oauth_codes SET used_at = now() WHERE code_hash = ${codeHash} AND used_at IS NULL
        RETURNING client_id, user_id, redirect_uri, scope, code_challenge, resource, expires_at > now() AS fresh`
      if (!code) {
        // Used before: revoke whatever it issued (RFC 6749 §4.1.2).
        const revoked = await tx<
          { id: string }[]
        >`UPDATE oauth_token_families SET revoked_at = now() WHERE code_hash = ${codeHash} AND revoked_at IS NULL RETURNING id`
        if (revoked.length) await this.options.bus.publish(tx, OAUTH_REVOKED, '')
        const known =
          revoked.length > 0 || (await tx`SELECT 1 FROM oauth_codes WHERE code_hash = ${codeHash}`).length > 0
        return { error: known ? 'the code was already used' : 'unknown code', revoked: revoked.map((r) => r.id) }
      }
      if (code.client_id !== client.client_id) return { error: 'the code was issued to another client' }
      if (!code.fresh) return { error: 'the code has expired' }
      if (code.redirect_uri !== params.redirect_uri)
        return { error: 'redirect_uri differs from the authorization request' }
      const challenge = createHash('sha256').update(params.code_verifier!).digest('base64url')
      if (challenge !== code.code_challenge) return { error: 'code_verifier does not match the code_challenge' }
      // Thrown, not returned: the transaction rolls back and the code stays usable (RFC 8707 §2.2).
      checkResource(params.resource, code.resource)
      const family = {
        id: crypto.randomUUID(),
        client_id: client.client_id,
        user_id: code.user_id,
        resource: code.resource,
      }
      await tx`
        INSERT INTO oauth_token_families (id, client_id, user_id, scope, resource, code_hash, browser, browser_session_hash)
        VALUES (${family.id}, ${family.client_id}, ${family.user_id}, ${code.scope}, ${family.resource}, ${codeHash}, ${browser?.summary ?? null}, ${browser?.pagesSignIn ?? null})`
      // One grant per browser: the one it held ends (the sign-in that just used its pages' session keeps it).
      const replaced = browser?.replacing
        ? await revokeGrantOfRefreshToken(tx, client.client_id, digest(browser.replacing), false)
        : undefined
      if (replaced) await this.options.bus.publish(tx, OAUTH_REVOKED, '')
      return {
        tokens: await this.issue(tx, family, code.scope, client.grant_types.includes('refresh_token')),
        revoked: replaced ? [replaced] : [],
      }
    })
    this.markRevoked(outcome.revoked)
    if ('error' in outcome) throw invalidGrant(outcome.error!)
    return outcome.tokens
  }

  /** Applies a family revocation here at once; other instances hear of it through the bus. */
  private markRevoked(familyIds: readonly string[] | undefined): void {
    for (const id of familyIds ?? [])
      this.revokedFamilies.set(id, true, Date.now() + (this.options.accessTokenTtl + 60) * 1000)
  }

  /** refresh_token grant: rotation; presenting a rotated token revokes its family. */
  async refresh(
    client: Client,
    params: { refresh_token?: string; scope?: string; resource?: string },
  ): Promise<TokenResponse> {
    if (!params.refresh_token) throw new OAuthError(400, 'invalid_request', 'refresh_token is required')
    if (!client.grant_types.includes('refresh_token'))
      throw new OAuthError(400, 'unauthorized_client', 'this client may not use refresh tokens')
    const hash = digest(params.refresh_token)
    const outcome = await this.options.system.begin(async (tx) => {
      const [token] = await tx<{ family_id: string; scope: string; idle: boolean }[]>`
        UPDATE oauth_refresh_tokens SET used_at = now() WHERE token_hash = ${hash} AND used_at IS NULL
        RETURNING family_id, scope, ${refreshIdle(tx, 'created_at', this.options.grantIdleTtl)} AS idle`
      if (!token) {
        const [used] = await tx<
          { family_id: string }[]
        >`SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = ${hash}`
        if (used && (await revokeFamily(tx, used.family_id))) await this.options.bus.publish(tx, OAUTH_REVOKED, '')
        return {
          error: used ? 'the refresh token was already used; its grant is now revoked' : 'unknown refresh token',
          revoked: used ? [used.family_id] : [],
        }
      }
      const [family] = await tx<
        { id: string; client_id: string; user_id: string; resource: string; revoked: boolean; expired: boolean }[]
      >`
        SELECT id, client_id, user_id::text, resource, revoked_at IS NOT NULL AS revoked,
          created_at <= now() - make_interval(secs => ${GRANT_SECONDS}) AS expired
        FROM oauth_token_families WHERE id = ${token.family_id}`
      if (!family || family.revoked) return { error: 'the grant was revoked' }
      if (family.expired) return { error: 'the grant has expired; the user must authorize the client again' }
      if (token.idle) {
        if (await revokeFamily(tx, family.id)) await this.options.bus.publish(tx, OAUTH_REVOKED, '')
        return {
          error: 'the grant went unused longer than SESSION_IDLE_TTL; the user must authorize the client again',
          revoked: [family.id],
        }
      }
      // A refused request must leave the token as it was (else the client's next, correct refresh
      // looks like reuse and revokes the grant): these refusals are thrown, rolling back the
      // transaction and with it the token's used_at.
      if (family.client_id !== client.client_id) throw invalidGrant('the refresh token was issued to another client')
      const granted = token.scope.split(' ')
      const requested = params.scope?.split(' ').filter(Boolean) ?? granted
      const wider = requested.find((s) => !granted.includes(s))
      if (wider) throw new OAuthError(400, 'invalid_scope', `scope ${JSON.stringify(wider)} was not granted`)
      checkResource(params.resource, family.resource)
      return { tokens: await this.issue(tx, family, [...new Set(requested)].join(' '), true) }
    })
    if ('error' in outcome) {
      this.markRevoked(outcome.revoked)
      throw invalidGrant(outcome.error!)
    }
    return outcome.tokens
  }

  /** One page of the live grants of `userId`, oldest first. */
  listUserGrants(userId: string, limit: number, after?: PageKey, filter?: GrantFilter) {
    return listLiveGrants(this.options.system, userId, limit, after, this.options.grantIdleTtl, filter)
  }

  /**
   * Revokes one live grant of `userId` (the user's doing): its tokens stop working at once, and a
   * web app grant's pages' sign-in ends. The grant (`current` if it is `currentGrant`), or undefined.
   */
  revokeUserGrant(userId: string, grantId: string, currentGrant?: string): Promise<GrantSummary | undefined> {
    return this.revokingFamilies(
      (tx) => revokeGrant(tx, userId, grantId, currentGrant),
      (grant) => (grant ? [grant.id] : []),
    )
  }

  /** Signs `client` out in a browser: revokes the grant of the refresh token its cookie held, and ends the pages' sign-in it came from. */
  async endBrowserGrant(client: Client, refreshToken: string): Promise<void> {
    await this.revokingFamilies(
      (tx) => revokeGrantOfRefreshToken(tx, client.client_id, digest(refreshToken), true),
      (id) => (id ? [id] : []),
    )
  }

  /** Revokes every live grant of `userId` (an administrator's doing): its tokens stop working at once. How many. */
  async revokeUserGrants(userId: string): Promise<number> {
    return (
      await this.revokingFamilies(
        (tx) => revokeAllGrants(tx, userId),
        (ids) => ids,
      )
    ).length
  }

  /**
   * Runs `revoke` in a transaction that announces the families it revoked (OAUTH_REVOKED, for the
   * other instances); this one refuses their tokens at once.
   */
  private async revokingFamilies<T>(revoke: (tx: Db) => Promise<T>, familyIds: (revoked: T) => string[]): Promise<T> {
    let revoked!: T
    await this.options.system.begin(async (tx) => {
      revoked = await revoke(tx)
      if (familyIds(revoked).length > 0) await this.options.bus.publish(tx, OAUTH_REVOKED, '')
    })
    this.markRevoked(familyIds(revoked))
    return revoked
  }

  /**
   * RFC 7009: revokes a refresh token (its whole family) or an access token (by jti, until it
   * expires). Unknown tokens, or another client's, are not an error: the answer is the same.
   */
  async revoke(client: Client, token: string, hint?: string): Promise<void> {
    const asAccess = async () => {
      const claims = await this.codec.verify(token)
      if (!claims || claims.client_id !== client.client_id) return false
      await this.options.system.begin(async (tx) => {
        await tx`INSERT INTO oauth_revoked_access_tokens (jti, expires_at) VALUES (${claims.jti}, to_timestamp(${claims.exp})) ON CONFLICT DO NOTHING`
        await this.options.bus.publish(tx, OAUTH_REVOKED, '')
      })
      this.revokedTokens.set(claims.jti, true, claims.exp * 1000)
      return true
    }
    const asRefresh = async () => {
      const revoked = await this.options.system.begin(async (tx) => {
        const [row] = await tx<{ family_id: string }[]>`
          SELECT r.family_id FROM oauth_refresh_tokens r JOIN oauth_token_families f ON f.id = r.family_id
          WHERE r.token_hash = ${digest(token)} AND f.client_id = ${client.client_id}`
        if (!row) return undefined
        if (await revokeFamily(tx, row.family_id)) await this.options.bus.publish(tx, OAUTH_REVOKED, '')
        return row.family_id
      })
      if (revoked) this.markRevoked([revoked])
      return revoked !== undefined
    }
    if (hint === 'access_token') (await asAccess()) || (await asRefresh())
    else (await asRefresh()) || (await asAccess())
  }

  /** The OAuth half of the bearer check: a valid, unrevoked access token as a principal. */
  async authenticate(token: string): Promise<Principal | undefined> {
    const claims = await this.codec.verify(token)
    if (!claims || this.revokedTokens.has(claims.jti) || this.revokedFamilies.has(claims.fam)) return undefined
    return { userId: claims.sub, clientId: claims.client_id, scopes: claims.scope.split(' '), grantId: claims.fam }
  }
}

/** RFC 8707: a token request naming a resource gets a token for the one the user authorized, or none. */
function checkResource(requested: string | undefined, authorized: string): void {
  if (requested !== undefined && requested !== authorized)
    throw new OAuthError(400, 'invalid_target', `this grant is for the resource ${authorized}`)
}

async function revokeFamily(db: Db, familyId: string): Promise<boolean> {
  return (
    (
      await db`UPDATE oauth_token_families SET revoked_at = now() WHERE id = ${familyId} AND revoked_at IS NULL RETURNING id`
    ).length > 0
  )
}
