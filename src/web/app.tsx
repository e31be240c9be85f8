// The kgs web app: entry point, sign-in, layout and routes. Every path is under /app; the server
// answers the same page for all of them and this module picks what to show.
import './app.css'
import { type JSX, render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { finishSignIn, onSignInEnded, registration, resumeSignIn, signedIn, signOut, startSignIn } from './auth.ts'
import { ConceptPage, Concepts } from './pages/concepts/concepts.tsx'
import { FactPage, Facts } from './pages/facts/facts.tsx'
import { InvestigationPage, Investigations } from './pages/investigations/investigations.tsx'
import { paths } from './pages/paths.ts'
import { ReportPage, Reports } from './pages/reports/reports.tsx'
import { SourcePage, Sources } from './pages/sources/sources.tsx'
import { AddSource } from './pages/sources/add.tsx'
import { Grants } from './pages/grants.tsx'
import { Repositories, Search } from './pages/home.tsx'
import { Users } from './pages/users.tsx'
import { Members } from './pages/members.tsx'
import { Registry } from './pages/registry.tsx'
import { Settings } from './pages/settings.tsx'
import { Transfer } from './pages/transfer.tsx'
import { PermissionsOf, startSession, useHeld } from './permissions.tsx'
import { WriteBar, writePage } from './pages/write.tsx'
import { ErrorBox, Link, navigate, onNavigate, Told, useLoad } from './ui.tsx'
import { routeSegments } from './routes.ts'
import type { Permissions } from './types.ts'

const REPOSITORY_TABS = [
  ['facts', 'Facts'],
  ['concepts', 'Concepts'],
  ['sources', 'Sources'],
  ['investigations', 'Investigations'],
  ['reports', 'Reports'],
  ['search', 'Search'],
  ['transfer', 'Export and import'],
  ['members', 'Members'],
  ['settings', 'Settings'],
] as const

/** What a page of the route table is made from: the repository, the row's id, the query. */
interface Match {
  repo: string
  id: string
  query: URLSearchParams
}
type Page = (match: Match) => JSX.Element

/**
 * A repository's pages, by the path under /app/r/{repo}/: the tab, then, for a row, its id (the
 * editors' …/new and …/{id}/edit are write.tsx's writePage). The tab's list is `list`; a row's
 * page `row`, where the tab has rows.
 */
const REPOSITORY_ROUTES: Record<string, { list: Page; row?: Page }> = {
  facts: {
    list: ({ repo, query }) => (
      <Facts repo={repo} source={query.get('source') ?? undefined} concept={query.get('concept') ?? undefined} />
    ),
    row: ({ repo, id }) => <FactPage repo={repo} id={id} />,
  },
  concepts: {
    list: ({ repo }) => <Concepts repo={repo} />,
    row: ({ repo, id }) => <ConceptPage repo={repo} id={id} />,
  },
  sources: {
    list: ({ repo }) => <Sources repo={repo} />,
    row: ({ repo, id }) => (id === 'new' ? <AddSource repo={repo} /> : <SourcePage repo={repo} id={id} />),
  },
  investigations: {
    list: ({ repo }) => <Investigations repo={repo} />,
    row: ({ repo, id }) => <InvestigationPage repo={repo} id={id} />,
  },
  reports: { list: ({ repo }) => <Reports repo={repo} />, row: ({ repo, id }) => <ReportPage repo={repo} id={id} /> },
  search: { list: ({ repo }) => <Search repo={repo} /> },
  transfer: { list: ({ repo }) => <Transfer repo={repo} /> },
  members: { list: ({ repo }) => <Members repo={repo} /> },
  settings: { list: ({ repo }) => <Settings repo={repo} /> },
}

/** The pages outside a repository, by their path under /app ("" is /app itself); /app/r/{repo}/… is RepositoryPage. */
const ROUTES: Record<string, () => JSX.Element> = {
  '': () => <Repositories />,
  registry: () => <Registry />,
  agents: () => <Grants />,
  'admin/users': () => <Users />,
}

/**
 * A repository's frame (breadcrumb, tabs) around the page of `rest`, with the person's permissions
 * there, read on every page; their answer names the repository too, so the frame reads nothing of
 * its own.
 */
function RepositoryPage({ repo, rest }: { repo: string; rest: string[] }) {
  const to = paths(repo)
  const [tab = 'facts', id, action] = rest
  const editor = writePage(repo, tab, id, action)
  const route = REPOSITORY_ROUTES[tab]
  const show = id === undefined ? route?.list : route?.row
  const page =
    editor ?? (show ? show({ repo, id: id ?? '', query: new URLSearchParams(location.search) }) : <NotFound />)
  return (
    // Read again on every page: a role changed meanwhile shows on the next page.
    <PermissionsOf key={location.pathname + location.search} repo={repo}>
      <Breadcrumb repo={repo} />
      <nav aria-label="Repository" class="tabs">
        <ul>
          {REPOSITORY_TABS.map(([path, label]) => (
            <li key={path}>
              <Link href={`${to.base}/${path}`} aria-current={tab === path ? 'page' : undefined}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {!editor && <WriteBar repo={repo} tab={tab} id={id} />}
      {page}
    </PermissionsOf>
  )
}

/** The way back from a repository's page, with its name as the permissions' answer says it (no read of its own). */
function Breadcrumb({ repo }: { repo: string }) {
  const { answer, error } = useHeld()
  if (error !== undefined) return <ErrorBox error={error} />
  if (!answer?.repository) return <p aria-live="polite">Loading…</p>
  return (
    <p class="breadcrumb">
      <Link href="/app">Repositories</Link> › <Link href={paths(repo).base}>{answer.repository.name}</Link>
    </p>
  )
}

const NotFound = () => (
  <>
    <h1 tabIndex={-1}>Not found</h1>
    <p>
      There is no such page. <Link href="/app">Back to the repositories</Link>
    </p>
  </>
)

/** What remounts the page: its path and query, except within a repository, whose frame stays (RepositoryPage). */
const routeKey = (path: string) => /^\/app\/r\/[^/]+/.exec(path)?.[0] ?? path + location.search

function Route({ path }: { path: string }) {
  const parts = routeSegments(path)
  if (!parts) return <NotFound />
  const [first, second, ...rest] = parts
  if (first === 'r' && second) return <RepositoryPage key={second} repo={second} rest={rest} />
  return (ROUTES[parts.join('/')] ?? NotFound)()
}

/** The repository an app path is in, if its segments route. */
const repositoryOf = (path: string) => {
  const [first, second] = routeSegments(path) ?? []
  return first === 'r' ? second : undefined
}

/** The signed-in app: the session (who, and what they may do where the tab opened) first, then the header and the page. */
function Shell() {
  const [session] = useLoad(() => startSession(repositoryOf(location.pathname)), 'session')
  if (session.state === 'loading') return <p aria-live="polite">Signing in…</p>
  if (session.state === 'failed')
    return (
      <main id="main">
        <ErrorBox error={session.error} />
      </main>
    )
  return <SignedIn session={session.value} />
}

function SignedIn({ session }: { session: Permissions }) {
  const [path, setPath] = useState(location.pathname)
  useEffect(() => {
    const off = onNavigate(() => setPath(location.pathname))
    // A navigation between the first render and this effect (which runs after paint) had no listener yet.
    setPath(location.pathname)
    return off
  }, [])
  const out = async () => {
    await signOut()
    navigate('/app', true)
  }
  return (
    <>
      <a href="#main" class="skip">
        Skip to content
      </a>
      <header>
        <nav aria-label="Main">
          <ul>
            <li>
              <Link href="/app" class="brand">
                kgs
              </Link>
            </li>
            <li>
              <Link href="/app">Repositories</Link>
            </li>
            <li>
              <Link href="/app/registry">Registry</Link>
            </li>
            <li>
              <Link href="/app/agents">Agents</Link>
            </li>
            {session.system_admin && (
              <li>
                <Link href="/app/admin/users">Users</Link>
              </li>
            )}
          </ul>
        </nav>
        <div class="account">
          <span>{session.user.email}</span>
          <button type="button" onClick={out}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main">
        <Told key={path + location.search} />
        <Route path={path} key={routeKey(path)} />
      </main>
    </>
  )
}

/** How a person without an account gets one, as REGISTRATION says (the authorization pages say the same). */
function NewAccount() {
  if (registration === 'closed')
    return (
      <p>
        No account yet? Accounts here are made by an administrator: ask yours for one (they create it with kgs user
        create).
      </p>
    )
  return (
    <>
      <p>
        No account yet?
        {registration === 'invite' &&
          ' Signing up needs the invitation code an administrator gave you for your e-mail address.'}
      </p>
      <button type="button" onClick={() => startSignIn(location.pathname + location.search, true)}>
        Create an account
      </button>
    </>
  )
}

function SignIn() {
  return (
    <main id="main" class="welcome">
      <h1 tabIndex={-1}>kgs</h1>
      <p>Browse, search and share your knowledge graphs.</p>
      <button type="button" class="primary" onClick={() => startSignIn(location.pathname + location.search)}>
        Sign in
      </button>
      <NewAccount />
      <p class="meta">
        Developers: the API is described at <a href="/swagger">/swagger</a>.
      </p>
    </main>
  )
}

function App() {
  const [state, setState] = useState<'signed-in' | 'signed-out' | 'working' | { error: unknown }>(
    signedIn() ? 'signed-in' : 'working',
  )
  useEffect(() => {
    const update = () => setState(signedIn() ? 'signed-in' : 'signed-out')
    const off = onNavigate(update)
    const offEnded = onSignInEnded(update)
    if (location.pathname === '/app/callback') {
      finishSignIn(new URLSearchParams(location.search)).then(
        (to) => navigate(to, true),
        (error) => {
          history.replaceState(null, '', '/app')
          setState({ error })
        },
      )
    } else if (!signedIn()) {
      // A load or a new tab: the token is in memory only; the browser's sign-in gives this tab one.
      void resumeSignIn().then(update, update)
    } else update()
    return () => {
      off()
      offEnded()
    }
  }, [])
  if (state === 'working') return <p aria-live="polite">Signing in…</p>
  if (state === 'signed-in') return <Shell />
  return (
    <>
      {typeof state === 'object' && <ErrorBox error={state.error} />}
      <SignIn />
    </>
  )
}

render(<App />, document.getElementById('app')!)
