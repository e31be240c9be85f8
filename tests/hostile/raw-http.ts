// HTTP/1.1 spoken by hand over a TCP socket (node:net), for what fetch will not send: oversized
// or malformed headers, lying lengths, and requests trickled a byte at a time.
import net from 'node:net'

export interface RawExchange {
  /** Everything the server sent, as latin1 text. */
  response: string
  /** The status of the response, if one came. */
  status?: number
  /** The JSON body of the response, if it had one. */
  body?: unknown
  /** 'server' when the server closed the connection, 'client' when we gave up first. */
  closedBy: 'server' | 'client'
  /** Bytes of the trickle written before the end. */
  trickled: number
}

export interface RawRequest {
  /** Written at once. */
  head: string | Uint8Array
  /** Then written one byte at a time, one every `everyMs`. */
  trickle?: string | Uint8Array
  everyMs?: number
  /** How long we keep the connection open at most: past it, closedBy is 'client'. */
  giveUpMs: number
}

/** Sends a request by hand and waits until the server closes the connection or `giveUpMs` passes. */
export function rawRequest(url: string, request: RawRequest): Promise<RawExchange> {
  const { hostname, port } = new URL(url)
  const trickle =
    typeof request.trickle === 'string' ? Buffer.from(request.trickle, 'latin1') : Buffer.from(request.trickle ?? [])
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname)
    const received: Buffer[] = []
    let trickled = 0
    let ticker: Timer | undefined
    const finish = (closedBy: RawExchange['closedBy']) => {
      clearInterval(ticker)
      clearTimeout(giveUp)
      socket.destroy()
      resolve({ ...parseResponse(Buffer.concat(received).toString('latin1')), closedBy, trickled })
    }
    const giveUp = setTimeout(() => finish('client'), request.giveUpMs)
    socket.on('data', (data: Buffer) => received.push(data))
    socket.on('close', () => finish('server'))
    // A reset is the server closing too (it may close while we write).
    socket.on('error', () => finish('server'))
    socket.write(typeof request.head === 'string' ? Buffer.from(request.head, 'latin1') : request.head)
    if (trickle.length > 0) {
      ticker = setInterval(() => {
        if (trickled < trickle.length && !socket.destroyed) socket.write(trickle.subarray(trickled, ++trickled))
      }, request.everyMs ?? 200)
    }
  })
}

function parseResponse(response: string): Pick<RawExchange, 'response' | 'status' | 'body'> {
  const status = /^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]
  const end = response.indexOf('\r\n\r\n')
  let body: unknown
  if (end >= 0 && /^content-type: application\/json/im.test(response.slice(0, end))) {
    try {
      body = JSON.parse(response.slice(end + 4))
    } catch {
      body = undefined
    }
  }
  return { response, status: status === undefined ? undefined : Number(status), body }
}

/** A request head: the request line, Host, the given headers, and the blank line. */
export function head(method: string, path: string, headers: Record<string, string> = {}): string {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'Host: localhost',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ]
  return `${lines.join('\r\n')}\r\n\r\n`
}
