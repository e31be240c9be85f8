// What a client that publishes a Client ID Metadata Document needs in tests: a certificate made
// for the occasion (openssl, for 127.0.0.1 and localhost, trusted by the kgs under test through
// NODE_EXTRA_CA_CERTS: CA trust only, no switch that lets plain http through), and an HTTPS server
// on loopback serving documents, which counts the requests it gets.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { instanceEnvironment, tempDir } from './backend.ts'
import { startServerProcess, type ServerProcess } from './server.ts'

export interface TestCertificate {
  /** PEM file of the self-signed certificate: the trust anchor to hand to NODE_EXTRA_CA_CERTS. */
  certFile: string
  cert: string
  key: string
}

export function testCertificate(): TestCertificate {
  const dir = tempDir('kgs-cimd-cert-')
  const certFile = join(dir, 'cert.pem')
  const keyFile = join(dir, 'key.pem')
  const made = Bun.spawnSync(
    [
      'openssl',
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=kgs test documents',
    ].concat(['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', keyFile, '-out', certFile]),
    { stderr: 'pipe' },
  )
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
  return { certFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') }
}

export interface DocumentServer {
  /** https://127.0.0.1:PORT */
  origin: string
  /** Requests received, by path. */
  hits: string[]
  stop(): void
}

/** Serves `answer(path, origin)`, or 404 when it gives nothing. */
export function startDocumentServer(
  certificate: TestCertificate,
  answer: (path: string, origin: string) => Response | Promise<Response> | undefined,
): DocumentServer {
  const hits: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    tls: { cert: certificate.cert, key: certificate.key },
    fetch(request): Response | Promise<Response> {
      const path = new URL(request.url).pathname
      hits.push(path)
      return answer(path, origin) ?? new Response('not here', { status: 404 })
    },
  })
  const origin: string = `https://127.0.0.1:${server.port}`
  return { origin, hits, stop: () => server.stop(true) }
}

/** A document as the SDK clients publish one, for the client at `clientId` redirecting to `redirectUri`. */
export function clientDocument(
  clientId: string,
  redirectUri: string,
  more: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: 'Documented host',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...more,
  }
}

/**
 * A kgs process (on the suite's backend) that trusts `certificate` and may fetch documents from
 * loopback; `stop` also drops its data. `env` adds settings.
 */
export async function startServerTrusting(
  certificate: TestCertificate,
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const instance = await instanceEnvironment()
  const kgs = await startServerProcess({
    ...instance.env,
    JWT_SECRET: randomBytes(32).toString('hex'),
    WORKERS: '0',
    NODE_EXTRA_CA_CERTS: certificate.certFile,
    CLIENT_METADATA_FETCH_ALLOW_PRIVATE: 'true',
    ...env,
  }).catch(async (error) => {
    await instance.cleanup()
    throw error
  })
  return {
    ...kgs,
    stop: async (signal) => {
      const status = await kgs.stop(signal)
      await instance.cleanup()
      return status
    },
  }
}
