// The import rule of ARCHITECTURE.md, checked by `npm run check:deps`: no cycles, and nothing
// imports a layer above its own (composition roots > features > shared infrastructure), nor a
// feature later in FEATURES than its own; the server imports nothing of the web app.
const ROOTS = '^src/(main|server|app|admin|local-ingest|job-kinds|job-thread|initdb-thread|hasher-thread|gzip-thread)\\.ts$'
/** Features, each allowed to import only those before it. */
const FEATURES = ['accounts', 'oauth', 'rbac', 'repositories', 'jobs', 'graph', 'ingest', 'extract', 'vectors', 'search', 'media', 'registry', 'bundle', 'mcp']
const ANY_FEATURE = `^src/(${FEATURES.join('|')})/`
const INFRASTRUCTURE = '^src/(db|blobs|http|runtime)/|^src/[^/]+\\.ts$'
/** The web app: browser code, built apart (scripts/build-web.ts) and served as files. */
const WEB = '^src/web/'

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'A cycle makes the order of loading, and of reading, ambiguous.', from: {}, to: { circular: true } },
    {
      name: 'features-not-up',
      severity: 'error',
      comment: 'A feature is used by the composition roots, never the other way round.',
      from: { path: ANY_FEATURE, pathNot: ROOTS },
      to: { path: ROOTS },
    },
    ...FEATURES.slice(0, -1).map((feature, i) => ({
      name: `${feature}-not-up`,
      severity: 'error',
      comment: `${feature}/ may import only the features before it in FEATURES (.dependency-cruiser.cjs).`,
      from: { path: `^src/${feature}/`, pathNot: ROOTS },
      to: { path: `^src/(${FEATURES.slice(i + 1).join('|')})/` },
    })),
    {
      name: 'bundle-format-pure',
      severity: 'error',
      comment: 'The bundle format (bundle/format/) is the codec alone: no database, HTTP, jobs, export or import, so the CLI and other runtimes can use it. It shares the graph\'s pure rules.',
      from: { path: '^src/bundle/format/' },
      to: { path: '^src/', pathNot: '^src/bundle/format/|^src/[^/]+\\.ts$|^src/graph/rules\\.ts$' },
    },
    {
      name: 'bundle-decoders-through-cursor',
      severity: 'error',
      comment: 'The reader\'s decoding stages use the scanner they share only through JsonCursor (bundle/format/read/cursor.ts); document.ts alone makes the scanner.',
      from: { path: '^src/bundle/format/read/', pathNot: '^src/bundle/format/read/(scanner|document)\\.ts$' },
      to: { path: '^src/bundle/format/read/scanner\\.ts$' },
    },
    {
      name: 'bundle-export-import-apart',
      severity: 'error',
      comment: 'The export (bundle/export/) and the import (bundle/import/) share only the codec and the scratch files (bundle/scratch.ts), so either can change without the other.',
      from: { path: '^src/bundle/(export|import)/' },
      to: { path: '^src/bundle/(export|import)/', pathNot: '^src/bundle/$1/' },
    },
    {
      name: 'extract-pure',
      severity: 'error',
      comment: 'The extractors (extract/) turn chunks into facts and concepts and nothing else: of the graph they use only its pure rules, of ingest only its types. Only the processing of sources reaches further: its job (`*-job.ts`), which stores what they draw, and what queues it (`*-start.ts`, `*-routes.ts`).',
      from: { path: '^src/extract/', pathNot: '-(job|start|routes)\\.ts$' },
      to: { path: '^src/', pathNot: '^src/extract/|^src/[^/]+\\.ts$|^src/graph/rules\\.ts$|^src/ingest/types\\.ts$' },
    },
    {
      name: 'graph-rules-pure',
      severity: 'error',
      comment: 'The graph\'s rules (graph/rules.ts) and size limits (graph/limits.ts) are pure functions, shared by the import, the write API and the bundle codec.',
      from: { path: '^src/graph/(rules|limits)\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'storage-not-http',
      severity: 'error',
      comment: 'SQL and storage code knows nothing of HTTP.',
      from: { path: '^src/db/|/store\\.ts$|^src/jobs/queue\\.ts$|^src/accounts/(sessions|users)\\.ts$|^src/oauth/grants\\.ts$' },
      to: { path: '^src/http/' },
    },
    {
      name: 'infrastructure-not-up',
      severity: 'error',
      comment: 'Shared infrastructure and utilities know no feature and no composition root.',
      from: { path: INFRASTRUCTURE, pathNot: ROOTS },
      to: { path: `${ANY_FEATURE}|${ROOTS}` },
    },
    {
      name: 'server-not-web',
      severity: 'error',
      comment: 'The server serves the built app (dist/web/, http/web-app.ts) and imports none of its source.',
      from: { path: '^src/', pathNot: WEB },
      to: { path: WEB },
    },
  ],
  options: {
    // TypeScript 7 has no JavaScript compiler API for dependency-cruiser to parse with.
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    // The swc extractor reads TypeScript but not TSX, and takes `import type` for an import: the web
    // app's .ts modules are cruised here (server-not-web); the app's own rule, that it imports
    // nothing of the server but types, is .dependency-cruiser-web.cjs's, which reads it through Babel.
    exclude: { path: '^src/web/.*\\.tsx$' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.json'] },
  },
}
