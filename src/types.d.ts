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
