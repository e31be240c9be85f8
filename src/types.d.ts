// Files imported with `with { type: 'file' }` resolve to a path (inside the binary when compiled).
declare module '*.wasm' {
  const path: string
  export default path
}
declare module '*.data' {
  const path: string
  export default path
}
// SQL migrations are imported as text so the compiled binary carries them.
declare module '*.sql' {
  const text: string
  export default text
}
// The model extractor's prompts (src/extract/prompts/), imported as text for the same reason.
declare module '*.md' {
  const text: string
  export default text
}
// Swagger UI's assets, embedded as files (src/http/swagger-ui.ts).
declare module '*.css' {
  const path: string
  export default path
}
declare module '*/swagger-ui-dist/swagger-ui-bundle.js' {
  const path: string
  export default path
}
declare module '*/swagger-ui-dist/oauth2-redirect.js' {
  const path: string
  export default path
}
declare module '*.png' {
  const path: string
  export default path
}
// The web app's built script (scripts/build-web.ts), embedded as a file (src/http/web-app.ts).
declare module '*/dist/web/app.js' {
  const path: string
  export default path
}
