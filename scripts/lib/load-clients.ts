// The clients of scripts/bench/load.ts, run as a child process of it (see its header for why).
// Over IPC: `setup` with a plan logs every client in (each its own session); each `run` drives
// the mix in a closed loop for some seconds and answers with the samples per operation.
// An operation is named "<class> <route>", e.g. "reads GET /{repoID}/facts/{factID}".
import { expectOk, mapConcurrently, runClosedLoop, type OperationSamples, type Step } from './load.ts'
import { random } from './synthetic.ts'

export const OPERATION_CLASSES = ['login', 'refresh', 'me', 'reads', 'jobs'] as const
export type OperationClass = (typeof OPERATION_CLASSES)[number]

/** One concrete request of a route: a path, and the repository for X-Repository-ID if the route takes it there. */
export interface RouteRequest {
  path: string
  repositoryHeader?: string
}

/** A read route of a repository and the requests that exercise it (one per id, filter or page). */
export interface Route {
  route: string
  requests: RouteRequest[]
}

export interface MixPlan {
  url: string
  clients: number
  /** Relative weights of the operation classes. */
  weights: Record<OperationClass, number>
  users: {
    email: string
    password: string /** Indexes into `repositories`: where the user holds a role. */
    repositories: number[]
  }[]
  repositories: { reads: Route[]; jobs: Route[] }[]
  seed: number
}

export type ClientMessage =
  | { type: 'ready' }
  | { type: 'result'; samples: [string, OperationSamples][] }
  | { type: 'failed'; error: string }
export type ParentMessage = { type: 'setup'; plan: MixPlan } | { type: 'run'; seconds: number; rampSeconds: number }

/** Concurrent logins at setup: each costs the server an argon2id hash of 64 MiB. */
const SETUP_LOGINS_AT_ONCE = 4

interface Client {
  user: MixPlan['users'][number]
  token: string
  refreshToken: string
  next: () => number
}

const json = { 'content-type': 'application/json' }

/** Logs the client in again: a new session replaces its current one. */
async function logIn(url: string, client: Client): Promise<void> {
  const body = JSON.stringify({ email: client.user.email, password: client.user.password })
  const grant = JSON.parse(
    await expectOk(await fetch(`${url}/api/v1/auth/login`, { method: 'POST', headers: json, body })),
  ) as { token: string; refresh_token: string }
  client.token = grant.token
  client.refreshToken = grant.refresh_token
}

async function refresh(url: string, client: Client): Promise<void> {
  const body = JSON.stringify({ refresh_token: client.refreshToken })
  const pair = JSON.parse(
    await expectOk(await fetch(`${url}/api/v1/auth/refresh`, { method: 'POST', headers: json, body })),
  ) as { token: string; refresh_token: string }
  client.token = pair.token
  client.refreshToken = pair.refresh_token
}

async function get(url: string, client: Client, request: RouteRequest): Promise<void> {
  const headers: Record<string, string> = { authorization: `Bearer ${client.token}` }
  if (request.repositoryHeader) headers['x-repository-id'] = request.repositoryHeader
  await expectOk(await fetch(url + request.path, { headers }))
}

/** The step a client takes next: a class by weight, then a repository of its user, a route and a request, each uniformly. */
function stepper(plan: MixPlan) {
  const total = OPERATION_CLASSES.reduce((sum, c) => sum + plan.weights[c], 0)
  const pick = <T>(client: Client, list: readonly T[]) => list[Math.floor(client.next() * list.length)]!
  const routeStep = (client: Client, kind: 'reads' | 'jobs'): Step => {
    const repository = plan.repositories[pick(client, client.user.repositories)]!
    const route = pick(client, repository[kind])
    const request = pick(client, route.requests)
    return { operation: `${kind} ${route.route}`, send: () => get(plan.url, client, request) }
  }
  return (client: Client): Step => {
    let draw = client.next() * total
    const chosen = OPERATION_CLASSES.find((c) => (draw -= plan.weights[c]) < 0) ?? 'reads'
    switch (chosen) {
      case 'login':
        return { operation: 'login POST /api/v1/auth/login', send: () => logIn(plan.url, client) }
      case 'refresh':
        return { operation: 'refresh POST /api/v1/auth/refresh', send: () => refresh(plan.url, client) }
      case 'me':
        return { operation: 'me GET /api/v1/users/me', send: () => get(plan.url, client, { path: '/api/v1/users/me' }) }
      default:
        return routeStep(client, chosen)
    }
  }
}

async function setUp(plan: MixPlan): Promise<Client[]> {
  const clients = Array.from(
    { length: plan.clients },
    (_, i): Client => ({
      user: plan.users[i % plan.users.length]!,
      token: '',
      refreshToken: '',
      next: random(plan.seed + i),
    }),
  )
  await mapConcurrently(clients, SETUP_LOGINS_AT_ONCE, (client) => logIn(plan.url, client))
  return clients
}

if (import.meta.main) {
  let clients: Client[] = []
  let next: ((client: Client) => Step) | undefined
  const reply = (message: ClientMessage) => process.send!(message)
  process.on('message', (message: ParentMessage) => {
    const work = async (): Promise<ClientMessage> => {
      if (message.type === 'setup') {
        clients = await setUp(message.plan)
        next = stepper(message.plan)
        return { type: 'ready' }
      }
      if (!next) throw new Error('run before setup')
      return {
        type: 'result',
        samples: [...(await runClosedLoop(clients, next, message.seconds, message.rampSeconds))],
      }
    }
    work().then(reply, (error: unknown) => reply({ type: 'failed', error: String(error) }))
  })
}
