// Files only the compiled binary carries (their paths inside it), which scripts/build.ts finds or
// makes at build time and puts in a module that takes this one's place. From source there are
// none: each package loads its native add-on from node_modules, initdb makes the first embedded
// database, and the web app is read from dist/web/, where scripts/build-web.ts builds it.
export const buildAssets: {
  /**
   * LanceDB's native add-on, compressed with zstd, as a plain embedded file (Bun's own way of embedding an
   * add-on reads the whole library at every start and copies it into the temporary directory),
   * with the name (by content hash) and size of the library it unpacks to.
   */
  lancedb?: { file: string; name: string; size: number }
  /** A fresh embedded database as initdb leaves it (.tar.gz): a first start unpacks it instead of running initdb. */
  pgliteTemplate?: string
  /** The web app's built files. */
  webApp?: { webAppJs: string; webAppCss: string }
} = {}
