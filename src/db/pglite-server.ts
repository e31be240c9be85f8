// Serves one PGlite database on a Unix socket, so that postgres.js (in this thread or in worker
// threads) talks to it as to a PostgreSQL server. Written by hand rather than taken from
// @electric-sql/pglite-socket: PGlite is one single session, and that library hands it to
// another connection after any protocol message, so connection B's Parse/Bind/Execute could run
// in the middle of A's batch ("portal \"\" does not exist", or A's rows sent to B).
//
// Here a connection owns the session from its first message until it has completed a batch
// (Sync, a simple Query, or its startup packet) outside a transaction; every other connection's
// messages wait, in order of arrival, and what a message produces goes to its own connection.
//
// The session's state is still shared, so clients must not rely on it: no named prepared
// statements (postgres.js `prepare: false`), no SET without LOCAL, no session advisory locks,
// temporary tables or LISTEN. COPY ... FROM STDIN makes PGlite exit and is not supported.
import type { PGlite } from '@electric-sql/pglite'
import { createServer, type Server, type Socket } from 'node:net'

const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102
/** PostgreSQL refuses longer startup packets too. */
const MAX_STARTUP_LENGTH = 10_000
/** Only a guard against runaway clients, far above what kgs opens (a few per pool, a pool per thread). */
const MAX_CONNECTIONS = 1024
const SYNC = 'S'.charCodeAt(0)
const QUERY = 'Q'.charCodeAt(0)
const TERMINATE = 'X'.charCodeAt(0)

/** A typed protocol message whose body is `fields` (each NUL-terminated). */
function message(type: string, ...fields: string[]): Buffer {
  const body = Buffer.from(fields.map((field) => `${field}\0`).join(''))
  const header = Buffer.alloc(5)
  header.write(type)
  header.writeInt32BE(4 + body.length, 1)
  return Buffer.concat([header, body])
}

const ROLLBACK = message('Q', 'ROLLBACK')
/**
 * For a connection that vanished mid-batch: the ROLLBACK aborts its implicit or explicit
 * transaction (PostgreSQL does the same when a client disconnects); if the batch had failed,
 * the server skips the ROLLBACK and the Sync ends the error state instead.
 */
const ABANDON = Buffer.concat([ROLLBACK, message('S')])
/** ErrorResponse: each field is a code byte and a string; an empty field ends the list. */
const TOO_MANY_CONNECTIONS = message('E', 'SFATAL', 'VFATAL', 'C53300', 'Msorry, too many clients already', '')

class Connection {
  /** Bytes received and not run yet; the first `framed` of them are complete messages. */
  input = Buffer.alloc(0)
  framed = 0
  /** Received after `input`, kept apart until the message being framed is complete. */
  parts: Buffer[] = []
  missing = 0
  /** Its startup packet has arrived (what follows is typed messages). */
  greeted = false
  /** Its startup packet has run. */
  started = false
  /** It sent Terminate: it closes once the messages before that have run. */
  terminating = false
  /** What ran last of this connection's was not the end of a batch (no Sync or Query yet). */
  midBatch = false
  closed = false

  constructor(readonly socket: Socket) {}
}

/**
 * Opens the database when a message needs it, and closes it when told to while it is idle: an
 * idle database costs only its socket, and connections stay open across a close (PGlite is one
 * shared session whatever the connection, so a reopened one serves them as before).
 */
export interface DatabaseHandle {
  open(): Promise<PGlite>
}

export class PGliteServer {
  private server: Server | undefined
  private db: PGlite | undefined
  private opening: Promise<PGlite> | undefined
  /** A close under way: a reopen waits for it (two PGlites must never share the files). */
  private closing: Promise<void> | undefined
  /** When a message last ran (performance.now()). */
  lastActive = performance.now()
  private readonly connections = new Set<Connection>()
  /** Connections with messages to run, in order of arrival, apart from the owner. */
  private readonly waiting: Connection[] = []
  private owner: Connection | undefined
  private running = false
  private pumping: Promise<void> = Promise.resolve()
  private stopped = false

  constructor(
    private readonly handle: DatabaseHandle,
    readonly path: string,
  ) {}

  get isOpen(): boolean {
    return this.db !== undefined || this.opening !== undefined
  }

  /**
   * Closes the database if nothing runs on it, is waiting for it or holds a transaction open;
   * the next message reopens it. False when it is busy (or already closed).
   */
  async closeIfIdle(): Promise<boolean> {
    const db = this.db
    if (!db || this.opening || this.running || this.owner || this.waiting.length > 0 || db.isInTransaction())
      return false
    this.db = undefined
    this.closing = db.close().finally(() => (this.closing = undefined))
    await this.closing
    return true
  }

  private database(): Promise<PGlite> {
    if (this.db) return Promise.resolve(this.db)
    this.opening ??= (async () => {
      await this.closing
      return this.handle.open()
    })().then(
      (db) => {
        this.db = db
        this.opening = undefined
        return db
      },
      (error) => {
        this.opening = undefined
        throw error
      },
    )
    return this.opening
  }

  start(): Promise<void> {
    const server = createServer((socket) => this.accept(socket))
    this.server = server
    return new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.path, () => {
        server.off('error', reject)
        resolve()
      })
    })
  }

  /** Closes every connection, waits for the message running on PGlite, if any, and closes it. */
  async stop(): Promise<void> {
    this.stopped = true
    const closed = new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
    for (const connection of this.connections) this.drop(connection)
    await this.pumping
    await closed
    const db = this.db ?? (await this.opening?.catch(() => undefined))
    this.db = undefined
    await db?.close()
  }

  private accept(socket: Socket): void {
    if (this.stopped) return void socket.destroy()
    if (this.connections.size >= MAX_CONNECTIONS) return void socket.end(TOO_MANY_CONNECTIONS)
    const connection = new Connection(socket)
    this.connections.add(connection)
    socket.on('data', (data: Buffer) => this.receive(connection, data))
    socket.on('error', () => this.drop(connection))
    socket.on('close', () => this.drop(connection))
  }

  private receive(connection: Connection, data: Buffer): void {
    if (connection.closed || connection.terminating) return
    if (data.length < connection.missing) {
      // Most of a large message: gather it and copy once, not once per chunk.
      connection.parts.push(data)
      connection.missing -= data.length
      return
    }
    connection.input = Buffer.concat([connection.input, ...connection.parts, data])
    connection.parts = []
    if (!this.frame(connection)) return
    if (connection === this.owner || this.waiting.includes(connection)) return this.kick()
    if (connection.framed > 0) {
      this.waiting.push(connection)
      this.kick()
    } else if (connection.terminating) {
      this.drop(connection, true)
    }
  }

  /**
   * Advances `framed` over the complete messages received, answering the requests that may
   * precede a startup packet. False when the connection was closed instead.
   */
  private frame(connection: Connection): boolean {
    const input = connection.input
    for (;;) {
      const at = connection.framed
      if (!connection.greeted) {
        if (input.length < 8) return this.need(connection, 8)
        const length = input.readInt32BE(0)
        const code = input.readInt32BE(4)
        if (length < 8 || length > MAX_STARTUP_LENGTH) return this.drop(connection)
        if (input.length < length) return this.need(connection, length)
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          connection.socket.write('N')
          connection.input = input.subarray(length)
          return this.frame(connection)
        }
        // PGlite has no backend process a CancelRequest could interrupt; PostgreSQL closes such a connection.
        if (code === CANCEL_REQUEST || code >>> 16 !== 3) return this.drop(connection)
        connection.greeted = true
        connection.framed = length
        continue
      }
      if (input.length < at + 5) return this.need(connection, at + 5)
      const end = at + 1 + input.readInt32BE(at + 1)
      if (end < at + 5) return this.drop(connection)
      if (input.length < end) return this.need(connection, end)
      if (input[at] === TERMINATE) {
        connection.terminating = true
        connection.input = input.subarray(0, at)
        return true
      }
      connection.framed = end
    }
  }

  private need(connection: Connection, length: number): true {
    connection.missing = length - connection.input.length
    return true
  }

  /** Runs waiting messages on PGlite until none can run; one pump at a time. */
  private kick(): void {
    if (this.running || this.stopped) return
    this.running = true
    this.pumping = this.pump()
  }

  private async pump(): Promise<void> {
    try {
      while (!this.stopped) {
        const owner = (this.owner ??= this.waiting.shift())
        if (!owner) return
        if (owner.closed) {
          await this.abandon(owner)
        } else if (owner.framed > 0) {
          await this.runNext(owner)
        } else if (owner.terminating) {
          this.drop(owner, true)
        } else {
          return // the rest of its batch has not arrived yet
        }
      }
    } finally {
      this.running = false
    }
  }

  /**
   * Runs the owner's messages through its next Sync or Query when others are waiting (all it
   * has when nobody is), then hands the session on if that completed a batch outside a
   * transaction.
   */
  private async runNext(owner: Connection): Promise<void> {
    const input = owner.input
    let end = 0
    let completesBatch = false
    if (!owner.started) {
      end = input.readInt32BE(0)
      completesBatch = true
    } else {
      while (end < owner.framed) {
        const type = input[end]
        end += 1 + input.readInt32BE(end + 1)
        completesBatch = type === SYNC || type === QUERY
        if (completesBatch && this.waiting.length > 0) break
      }
    }
    owner.input = input.subarray(end)
    owner.framed -= end
    try {
      await this.run(input.subarray(0, end), (data) => {
        if (!owner.closed) owner.socket.write(Buffer.from(data))
      })
    } catch {
      // PGlite itself failed (it is closing, or it aborted): nothing sensible can go back.
      this.drop(owner)
      return
    }
    owner.started = true
    owner.midBatch = !completesBatch
    if (completesBatch && !this.db?.isInTransaction()) {
      this.owner = undefined
      if (!owner.closed && (owner.framed > 0 || owner.terminating)) this.waiting.push(owner)
    }
  }

  /** The owner went away: undo what it left unfinished, then hand the session on. */
  private async abandon(owner: Connection): Promise<void> {
    this.owner = undefined
    try {
      if (owner.midBatch || this.db?.isInTransaction()) await this.run(ABANDON, () => {})
      if (this.db?.isInTransaction()) await this.run(ROLLBACK, () => {})
    } catch {
      // PGlite itself failed; whoever uses it next gets the error.
    }
  }

  private async run(messages: Uint8Array, onRawData: (data: Uint8Array) => void): Promise<void> {
    const db = await this.database()
    this.lastActive = performance.now()
    await db.runExclusive(() => db.execProtocolRawStream(messages, { onRawData }))
    this.lastActive = performance.now()
  }

  /** Closes the connection and forgets its messages; the pump cleans up if it owned the session. */
  private drop(connection: Connection, graceful = false): false {
    if (connection.closed) return false
    connection.closed = true
    connection.input = Buffer.alloc(0)
    connection.parts = []
    connection.framed = 0
    this.connections.delete(connection)
    const queued = this.waiting.indexOf(connection)
    if (queued >= 0) this.waiting.splice(queued, 1)
    if (graceful) connection.socket.end()
    else connection.socket.destroy()
    if (connection === this.owner) this.kick()
    return false
  }
}
