// The kgs web app: entry point, sign-in, layout and routes. Every path is under /app; the server
// answers the same page for all of them and this module picks what to show.
import './app.css'
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { apiPath, get } from './api.ts'
import { finishSignIn, onSignInEnded, registration, resumeSignIn, signedIn, signOut, startSignIn } from './auth.ts'
import { ConceptPage, Concepts, FactPage, Facts, InvestigationPage, Investigations, paths, ReportPage, Reports, SourcePage, Sources } from './pages/graph.tsx'
import { Grants } from './pages/grants.tsx'
import { Repositories, Search } from './pages/home.tsx'
import { Users } from './pages/users.tsx'
import { Members } from './pages/members.tsx'
import { Registry } from './pages/registry.tsx'
import { Settings } from './pages/settings.tsx'
import { Transfer } from './pages/transfer.tsx'
import { PermissionsOf } from './permissions.tsx'
import { WriteBar, writePage } from './pages/write.tsx'
import { ErrorBox, Link, navigate, onNavigate, Told, useLoad, Show } from './ui.tsx'
import { routeSegments } from './routes.ts'
import type { Repository } from './types.ts'

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

function RepositoryPage({ repo, rest }: { repo: string; rest: string[] }) {
  const to = paths(repo)
  const [loaded] = useLoad(() => get<Repository>(apiPath`/api/v1/repositories/${repo}`), repo)
  const [tab = 'facts', id, action] = rest
  const query = new URLSearchParams(location.search)
  const editor = writePage(repo, tab, id, action)
  const page = (() => {
    if (editor) return editor
    switch (tab) {
      case 'facts':
        return id ? <FactPage repo={repo} id={id} /> : <Facts repo={repo} source={query.get('source') ?? undefined} />
      case 'concepts':
        return id ? <ConceptPage repo={repo} id={id} /> : <Concepts repo={repo} />
      case 'sources':
        return id ? <SourcePage repo={repo} id={id} /> : <Sources repo={repo} />
      case 'investigations':
        return id ? <InvestigationPage repo={repo} id={id} /> : <Investigations repo={repo} />
      case 'reports':
        return id ? <ReportPage repo={repo} id={id} /> : <Reports repo={repo} />
      case 'search':
        return <Search repo={repo} />
      case 'transfer':
        return <Transfer repo={repo} />
      case 'members':
        return <Members repo={repo} />
      case 'settings':
        return <Settings repo={repo} />
      default:
        return <NotFound />
    }
  })()
  return (
    <PermissionsOf repo={repo}>
      <Show loaded={loaded}>
        {(repository) => (
          <p class="breadcrumb">
            <Link href="/app">Repositories</Link> › <Link href={to.base}>{repository.name}</Link>
          </p>
        )}
      </Show>
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

const NotFound = () => (
  <>
    <h1 tabIndex={-1}>Not found</h1>
    <p>
      There is no such page. <Link href="/app">Back to the repositories</Link>
    </p>
  </>
)

function Route({ path }: { path: string }) {
  const parts = routeSegments(path)
  if (!parts) return <NotFound />
  const [first, second, ...rest] = parts
  if (first === undefined) return <Repositories />
  if (first === 'r' && second) return <RepositoryPage repo={second} rest={rest} />
  if (first === 'registry') return <Registry />
  if (first === 'agents') return <Grants />
  if (first === 'admin' && second === 'users') return <Users />
  return <NotFound />
}

function Shell() {
  const [path, setPath] = useState(location.pathname)
  useEffect(() => onNavigate(() => setPath(location.pathname)), [])
  const [permissions] = useLoad(() => get<{ system_admin: boolean }>('/api/v1/permissions'), 'permissions')
  const [me] = useLoad(() => get<{ email: string }>('/api/v1/users/me'), 'me')
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
            {permissions.state === 'done' && permissions.value.system_admin && (
              <li>
                <Link href="/app/admin/users">Users</Link>
              </li>
            )}
          </ul>
        </nav>
        <div class="account">
          {me.state === 'done' && <span>{me.value.email}</span>}
          <button type="button" onClick={out}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main">
        <Told key={path + location.search} />
        <Route path={path} key={path + location.search} />
      </main>
    </>
  )
}

/** How a person without an account gets one, as REGISTRATION says (the authorization pages say the same). */
function NewAccount() {
  if (registration === 'closed') return <p>No account yet? Accounts here are made by an administrator: ask yours for one (they create it with kgs user create).</p>
  return (
    <>
      <p>No account yet?{registration === 'invite' && ' Signing up needs the invitation code an administrator gave you for your e-mail address.'}</p>
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
  const [state, setState] = useState<'signed-in' | 'signed-out' | 'working' | { error: unknown }>(signedIn() ? 'signed-in' : 'working')
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
