// The web app's import rule of ARCHITECTURE.md, checked by `npm run check:deps` beside the server's
// (.dependency-cruiser.cjs): the app imports nothing of the server but types. Its modules are read
// through Babel's TypeScript preset, which reads TSX and erases `import type` as the build does, so
// what is left of an import of the server is a value the browser would load. The server's own
// cruise keeps its parser (swc), which sees type imports, as its layer rules need.
module.exports = {
  forbidden: [
    {
      name: 'web-imports-server-types-only',
      severity: 'error',
      comment: 'The app is built apart for the browser: it may import the server\'s types (erased), never its values.',
      from: { path: '^src/web/' },
      to: { path: '^src/', pathNot: '^src/web/' },
    },
    {
      name: 'web-no-cycles',
      severity: 'error',
      from: { path: '^src/web/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    babelConfig: { fileName: '.dependency-cruiser-web.babel.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
  },
}
