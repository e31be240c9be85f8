// Optional throttling of the endpoints that guess at credentials or create things: sign-in,
// token, registration (THROTTLE_* settings, all off by default). Each kind of request has a
// budget per client address and, where the request names one, per account (the e-mail signed
// in to, the OAuth client_id): an attacker rotating addresses is still held per target account.
//
// Budgets live in this process's memory (bounded): a fleet of N processes grants up to N times
// the configured figure. They are a brake on online guessing, not a quota; see docs/api.md, "Throttling".
import { isIP } from 'node:net'
import type { Config, ThrottleRates } from '../config.ts'
import type { Rate } from '../config-variables.ts'
import { ExpiringMap } from '../expiring.ts'
import { HttpError } from './errors.ts'

/**
 * Keys each budget remembers at most (about 12 MB at the bound); past it the least recently
 * charged key is forgotten, which an attacker can force only by spending on 50,000 other keys.
 */
const MAX_KEYS = 50_000

/** Slack for the float sum of `limit` intervals, which can land a hair past the period itself. */
const ROUNDING_MS = 1e-6

/**
 * A budget of `limit` units per `period` for each key, as a generic cell rate algorithm: one
 * number per key (the time at which its budget would be whole again, "due"), refilled evenly
 * one unit per period/limit. A key whose budget is whole holds no entry.
 */
export class RateLimiter {
  private readonly due = new ExpiringMap<string, number>(MAX_KEYS)
  private readonly intervalMs: number

  constructor(private readonly rate: Rate) {
    this.intervalMs = rate.periodMs / rate.limit
  }

  /** Takes one unit of the key's budget: 0 if taken, else the milliseconds until one is free. */
  take(key: string): number {
    const now = Date.now()
    const due = (this.due.get(key) ?? now) + this.intervalMs
    const wait = due - now - this.rate.periodMs
    if (wait > ROUNDING_MS) return wait
    this.due.set(key, due, due)
    return 0
  }

  /** Returns a unit taken by take(). */
  giveBack(key: string): void {
    const due = this.due.get(key)
    if (due === undefined) return
    const earlier = due - this.intervalMs
    if (earlier <= Date.now()) this.due.delete(key)
    else this.due.set(key, earlier, earlier)
  }
}

/** What admit() decided. forgive(): the attempt succeeded, so where only failures count it is given back. */
export type Admission = { refused: true; retryAfterSeconds: number } | { refused: false; forgive(): void }

/** Admitted with nothing to give back: no budget applies, or successes count too. */
const admittedFreely: Admission = { refused: false, forgive: () => {} }

/** The budgets of one kind of request: per client address, and per the account a request names. */
export class Throttle {
  private readonly byAddress?: RateLimiter
  private readonly byAccount?: RateLimiter

  constructor(
    rates: ThrottleRates,
    private readonly clientAddress: (request: Request) => string | undefined,
    private readonly options: {
      /** Ends the 429 message: "too many {counted}; retry after N seconds". */
      counted: string
      /** Registrations count whether they succeed or not; sign-ins and token requests only when they fail. */
      successesCount: boolean
    },
  ) {
    if (rates.perIp) this.byAddress = new RateLimiter(rates.perIp)
    if (rates.perAccount) this.byAccount = new RateLimiter(rates.perAccount)
  }

  /** Charges one attempt to the client's address and to `account`, or says how long to wait. */
  admit(request: Request, account: string | undefined): Admission {
    const charges: [RateLimiter, string][] = []
    if (this.byAddress) charges.push([this.byAddress, addressKey(this.clientAddress(request))])
    if (this.byAccount && account !== undefined) charges.push([this.byAccount, account])
    for (const [index, [limiter, key]] of charges.entries()) {
      const wait = limiter.take(key)
      if (wait === 0) continue
      // Refused unheard, so it was no attempt: the budgets charged before are given back.
      for (const [charged, chargedKey] of charges.slice(0, index)) charged.giveBack(chargedKey)
      return refusal(wait)
    }
    if (charges.length === 0 || this.options.successesCount) return admittedFreely
    return { refused: false, forgive: () => charges.forEach(([limiter, key]) => limiter.giveBack(key)) }
  }

  /**
   * Runs `attempt` if the budgets allow it, else throws the error `refuse` makes (by default
   * 429 {"error"} with Retry-After). An attempt that throws counts; one that returns may not.
   */
  async guard<T>(
    request: Request,
    account: string | undefined,
    attempt: () => Promise<T>,
    refuse = this.tooManyRequests,
  ): Promise<T> {
    const admission = this.admit(request, account)
    if (admission.refused) throw refuse(admission.retryAfterSeconds)
    const result = await attempt()
    admission.forgive()
    return result
  }

  refusalMessage(retryAfterSeconds: number): string {
    return `too many ${this.options.counted}; retry after ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}`
  }

  readonly tooManyRequests = (retryAfterSeconds: number): Error =>
    new HttpError(429, this.refusalMessage(retryAfterSeconds), { 'retry-after': String(retryAfterSeconds) })
}

function refusal(waitMs: number): Admission {
  // Retry-After counts whole seconds (RFC 9110 §10.2.3): rounded up, so a client obeying it is admitted.
  return { refused: true, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) }
}

export interface Throttles {
  /** POST /api/v1/auth/login and the OAuth sign-in form; per account: the e-mail. */
  login: Throttle
  /** POST /api/v1/auth/refresh, /api/v1/oauth/token and /api/v1/oauth/revoke; per account: the client_id. */
  token: Throttle
  /** POST /api/v1/auth/register, the sign-up form of the authorization pages and /api/v1/oauth/register; per address only. */
  register: Throttle
  /** GET /api/v1/oauth/authorize, which records a pending authorization: the registrations' rate, a budget of its own. */
  authorize: Throttle
  /** POST /api/v1/repositories; per address only. */
  createRepository: Throttle
}

/** `peerAddress`: the address of the connection a request came on (Bun's server.requestIP). */
export function createThrottles(
  config: Pick<Config, 'throttle' | 'trustedProxies'>,
  peerAddress: (request: Request) => string | undefined,
): Throttles {
  const address = (request: Request) => clientAddress(request, peerAddress(request), config.trustedProxies)
  return {
    login: new Throttle(config.throttle.login, address, { counted: 'failed sign-ins', successesCount: false }),
    token: new Throttle(config.throttle.token, address, { counted: 'failed token requests', successesCount: false }),
    register: new Throttle(config.throttle.register, address, { counted: 'registrations', successesCount: true }),
    authorize: new Throttle(config.throttle.register, address, {
      counted: 'authorization requests',
      successesCount: true,
    }),
    createRepository: new Throttle(config.throttle.createRepository, address, {
      counted: 'repositories created',
      successesCount: true,
    }),
  }
}

/**
 * The client's address. With `trustedProxies` reverse proxies in front, each appends the address
 * it was reached from to X-Forwarded-For, so the entry that many places from the right was
 * written by the outermost one; entries left of it are whatever the client sent. Without such an
 * entry (a request that bypassed the proxies) the connection's address stands.
 */
export function clientAddress(request: Request, peer: string | undefined, trustedProxies: number): string | undefined {
  if (trustedProxies === 0) return peer
  const forwarded = (request.headers.get('x-forwarded-for') ?? '').split(',')
  const recorded = forwarded.length >= trustedProxies ? forwarded[forwarded.length - trustedProxies]!.trim() : ''
  return isIP(recorded) ? recorded : peer
}

/**
 * The budget key of an address: IPv4 as is (also when IPv4-mapped), IPv6 by its /64 network,
 * the block a single subscriber is given, so that rotating through it gains nothing.
 */
export function addressKey(address: string | undefined): string {
  if (address === undefined) return 'unknown'
  const lower = address.toLowerCase().replace(/%.*$/, '')
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)?.[1]
  if (mapped) return mapped
  if (isIP(lower) !== 6) return lower
  const [head, tail] = lower.split('::') as [string, string | undefined]
  const groups = head ? head.split(':') : []
  if (tail !== undefined) {
    const tailGroups = tail ? tail.split(':') : []
    // A dotted IPv4 ending stands for two groups.
    const tailSize = tailGroups.reduce((size, group) => size + (group.includes('.') ? 2 : 1), 0)
    groups.push(...Array<string>(8 - groups.length - tailSize).fill('0'), ...tailGroups)
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}
