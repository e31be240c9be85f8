// Many connections sharing one embedded database's single PGlite session through PGliteServer:
// independent postgres.js clients, a worker thread's client, and bare protocol clients doing
// what postgres.js never does (vanish mid-batch, SSLRequest, Terminate inside a transaction).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { once } from 'node:events'
import { createConnection, type Socket } from 'node:net'
import { join } from 'node:path'
import { EmbeddedCluster } from '../../src/db/embedded.ts'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import type { WorkerReply, WorkerRequest } from './pglite-client-worker.ts'
import { expectedAnswers, incrementsIn, workload } from './pglite-workload.ts'

/** A typed protocol message; string parts are sent NUL-terminated, byte arrays as they are. */
function frame(type: string, ...parts: (string | number[])[]): Buffer {
  const body = Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(`${part}\0`) : Buffer.from(part))),
  )
  const header = Buffer.alloc(5)
  header.write(type)
  header.writeInt32BE(4 + body.length, 1)
  return Buffer.concat([header, body])
}

function int32(value: number): Buffer {
  const bytes = Buffer.alloc(4)
  bytes.writeInt32BE(value)
  return bytes
}

/** The packets before the startup packet's answer have no type byte: length, then body. */
const untyped = (...parts: Buffer[]) => Buffer.concat([int32(4 + Buffer.concat(parts).length), ...parts])

const protocol = {
  sslRequest: () => untyped(int32(80877103)),
  /** Protocol 3.0. */
  startup: () => untyped(int32(0x30000), Buffer.from('user\0postgres\0database\0postgres\0\0')),
  query: (text: string) => frame('Q', text),
  /** Unnamed statement, no parameter types. */
  parse: (text: string) => frame('P', '', text, [0, 0]),
  /** Unnamed portal and statement: no parameter formats, parameters or result formats. */
  bind: () => frame('B', '', '', [0, 0, 0, 0, 0, 0]),
  /** Unnamed portal, no row limit. */
  execute: () => frame('E', '', [0, 0, 0, 0]),
  terminate: () => frame('X'),
}

/** A bare protocol client: sends bytes, and waits for message types in what comes back. */
class RawClient {
  private received = Buffer.alloc(0)
  private arrived = () => {}

  private constructor(readonly socket: Socket) {
    socket.on('data', (data: Buffer) => {
      this.received = Buffer.concat([this.received, data])
      this.arrived()
    })
  }

  static async connect(path: string): Promise<RawClient> {
    const socket = createConnection(path)
    await once(socket, 'connect')
    return new RawClient(socket)
  }

  send(...messages: Buffer[]): void {
    this.socket.write(Buffer.concat(messages))
  }

  /** The next `count` bytes as they are (the answer to an SSLRequest is one unframed byte). */
  async bytes(count: number): Promise<string> {
    while (this.received.length < count) await new Promise<void>((resolve) => (this.arrived = resolve))
    const bytes = this.received.subarray(0, count).toString('latin1')
    this.received = this.received.subarray(count)
    return bytes
  }

  /** The types of the messages received up to and including the first of type `last`. */
  async until(last: string): Promise<string[]> {
    const types: string[] = []
    for (;;) {
      while (this.received.length < 5 || this.received.length < 1 + this.received.readInt32BE(1)) {
        await new Promise<void>((resolve) => (this.arrived = resolve))
      }
      const type = String.fromCharCode(this.received[0]!)
      types.push(type)
      this.received = this.received.subarray(1 + this.received.readInt32BE(1))
      if (type === last) return types
    }
  }
}

describe.if(BACKEND === 'embedded')(
  'PGlite server (embedded only: TEST_DATABASE_URL selects PostgreSQL, which needs no multiplexer)',
  () => {
    let instance: Awaited<ReturnType<typeof instanceEnvironment>>
    let cluster: EmbeddedCluster
    let path: string
    const clients: postgres.Sql[] = []
    // biome-ignore lint/complexity/noBannedTypes: postgres.js's own spelling of "no custom types"
    const client = (options: postgres.Options<{}> = {}) => {
      const sql = postgres({
        path,
        database: 'postgres',
        user: 'postgres',
        max: 4,
        prepare: false,
        onnotice: () => {},
        ...options,
      })
      clients.push(sql)
      return sql
    }
    let observer: postgres.Sql
    const count = async (v: string) =>
      ((await observer`SELECT count(*)::int AS n FROM marks WHERE v = ${v}`) as unknown as [{ n: number }])[0].n
    const counter = async () =>
      ((await observer`SELECT n FROM shared_counter WHERE id = 1`) as unknown as [{ n: number }])[0].n

    beforeAll(async () => {
      instance = await instanceEnvironment()
      cluster = EmbeddedCluster.start(join(instance.dataDir, 'pg'))
      path = await cluster.socketFor('system')
      observer = client()
      await observer`CREATE TABLE shared_counter (id int PRIMARY KEY, n int NOT NULL)`
      await observer`CREATE TABLE marks (id serial PRIMARY KEY, v text NOT NULL)`
    })
    afterAll(async () => {
      await Promise.all(clients.map((sql) => sql.end({ timeout: 1 })))
      await cluster?.close()
      await instance?.cleanup()
    })

    test('independent clients interleaving hundreds of queries and transactions each get their own answers', async () => {
      await observer`INSERT INTO shared_counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = 0`
      const sources = ['a', 'b', 'c', 'd']
      const answers = await Promise.all(sources.map((source) => workload(client(), source, 100)))
      expect(answers).toEqual(sources.map((source) => expectedAnswers(source, 100)))
      expect(await counter()).toBe(4 * incrementsIn(100))
    })

    test('a message much larger than a socket read arrives whole, and its answer too', async () => {
      const large = 'kgs '.repeat(1_000_000)
      const [row] = await client()<{ echo: string }[]>`SELECT ${large}::text AS echo`
      expect(row!.echo === large).toBe(true)
    })

    test('a transaction open on one client holds back the statements of the others until it ends', async () => {
      const a = client()
      let written!: () => void
      const bWritten = new Promise<void>((resolve) => (written = resolve))
      const b = client({ debug: (_connection, query) => query.includes('RETURNING') && written() })
      await b`SELECT 1` // connected beforehand, so its statement goes out at once
      const events: string[] = []
      let bDone!: Promise<{ seen: number }[]>
      const aDone = a
        .begin(async (tx) => {
          await tx`INSERT INTO marks (v) VALUES (${'rolled back'})`
          bDone = b<
            { seen: number }[]
          >`INSERT INTO marks (v) VALUES (${'held back'}) RETURNING (SELECT count(*)::int FROM marks WHERE v = ${'rolled back'}) AS seen`
          bDone.then(() => events.push('b done'))
          await bWritten
          await tx`SELECT 1` // by this answer, B's statement has reached the server
          events.push('a rolls back')
          throw new Error('roll back')
        })
        .catch((error: Error) => error.message)
      expect(await aDone).toBe('roll back')
      // Had B run inside A's transaction (same session), it would have seen A's row and been rolled back with it.
      expect(await bDone).toEqual([{ seen: 0 }])
      expect(events).toEqual(['a rolls back', 'b done'])
      expect(await count('rolled back')).toBe(0)
      expect(await count('held back')).toBe(1)
    })

    test('a client ended mid-transaction leaves the session usable and its uncommitted row absent', async () => {
      const doomed = client()
      let inserted!: () => void
      const rowInserted = new Promise<void>((resolve) => (inserted = resolve))
      let release!: () => void
      const ended = new Promise<void>((resolve) => (release = resolve))
      const transaction = doomed
        .begin(async (tx) => {
          await tx`INSERT INTO marks (v) VALUES (${'uncommitted'})`
          inserted()
          await ended
          await tx`SELECT 1`
        })
        .catch((error: { code?: string }) => error.code)
      await rowInserted
      await doomed.end({ timeout: 0 })
      release()
      expect(await transaction).toBe('CONNECTION_CLOSED')
      // The dead connection owned the session inside a transaction: this waits for its rollback.
      expect(await count('uncommitted')).toBe(0)
      await client()`INSERT INTO marks (v) VALUES (${'after the kill'})`
      expect(await count('after the kill')).toBe(1)
    })

    test('a connection vanishing mid-batch, with or without an error, leaves nothing behind', async () => {
      const midInsert = await RawClient.connect(path)
      midInsert.send(protocol.sslRequest())
      expect(await midInsert.bytes(1)).toBe('N')
      midInsert.send(protocol.startup())
      expect((await midInsert.until('Z')).filter((type) => type !== 'S')).toEqual(['R', 'K', 'Z'])
      midInsert.send(protocol.parse(`INSERT INTO marks (v) VALUES ('mid-batch')`), protocol.bind(), protocol.execute())
      expect(await midInsert.until('C')).toEqual(['1', '2', 'C'])
      midInsert.socket.destroy()

      const midError = await RawClient.connect(path)
      midError.send(protocol.startup())
      await midError.until('Z')
      midError.send(protocol.parse('SELECT no_such_column'))
      expect(await midError.until('E')).toEqual(['E'])
      midError.socket.destroy()

      // Left in the failed batch's state, the session would ignore everything until a Sync of ours.
      expect(await count('mid-batch')).toBe(0)
    })

    test.each(['Terminate', 'a dropped socket'])(
      '%s inside a transaction closes the connection and rolls the transaction back',
      async (how) => {
        const raw = await RawClient.connect(path)
        raw.send(protocol.startup())
        await raw.until('Z')
        const mark = `closed by ${how}`
        raw.send(protocol.query(`BEGIN; INSERT INTO marks (v) VALUES ('${mark}')`))
        expect(await raw.until('Z')).toEqual(['C', 'C', 'Z'])
        const closed = once(raw.socket, 'close')
        if (how === 'Terminate') raw.send(protocol.terminate())
        else raw.socket.destroy()
        await closed
        expect(await count(mark)).toBe(0)
      },
    )

    test("a worker thread's own pool works alongside this thread's, interleaved", async () => {
      await observer`INSERT INTO shared_counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = 0`
      const worker = new Worker(new URL('./pglite-client-worker.ts', import.meta.url))
      try {
        const replies: WorkerReply[] = []
        let replied = () => {}
        worker.onmessage = (event: MessageEvent<WorkerReply>) => {
          replies.push(event.data)
          replied()
        }
        const reply = async (): Promise<WorkerReply> => {
          while (replies.length === 0) await new Promise<void>((resolve) => (replied = resolve))
          return replies.shift()!
        }
        worker.postMessage({ path, source: 'worker', operations: 200 } satisfies WorkerRequest)
        expect(await reply()).toEqual({ connected: true })
        worker.postMessage('go')
        const [mine, theirs] = await Promise.all([workload(client(), 'main', 200), reply()])
        expect(theirs).toEqual({ answers: expectedAnswers('worker', 200) })
        expect(mine).toEqual(expectedAnswers('main', 200))
        expect(await counter()).toBe(2 * incrementsIn(200))
        // Both ran at once: their transactions' marks alternate between the threads more than once.
        const marks = await observer<{ v: string }[]>`SELECT v FROM marks WHERE v IN ('main', 'worker') ORDER BY id`
        const switches = marks.filter((mark, i) => i > 0 && mark.v !== marks[i - 1]!.v).length
        expect(switches).toBeGreaterThan(1)
      } finally {
        worker.terminate()
      }
    })
  },
)
