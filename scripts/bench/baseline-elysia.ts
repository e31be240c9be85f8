// The baseline of scripts/bench/http.ts: a bare Elysia hello-world answering JSON on /healthz.
import { Elysia } from 'elysia'

const app = new Elysia().get('/healthz', () => ({ status: 'ok' })).listen({ port: 0, hostname: '127.0.0.1' })
console.log(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${app.server!.port}` }))
