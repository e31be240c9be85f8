// The local UUIDs of an import's largest sections by bundle position (import-rows.ts): the link
// sections send these instead of having PostgreSQL probe a mapping table per row.
import { UUID_TEXT_LENGTH, writeUuidText } from '../../uuid.ts'

const NIBBLE = new Map([...'0123456789abcdefABCDEF'].map((digit) => [digit.charCodeAt(0), Number.parseInt(digit, 16)]))
const NULL = 'NULL'
const COMMA = 44
const DASH = 45

/** UUIDs by position, 16 bytes each (a million take 16 MB, where strings would take several times that). */
export class LocalIds {
  private bytes = new Uint8Array(0)
  private known = new Uint8Array(0)

  set(pos: number, id: string): void {
    if (pos >= this.known.length) this.grow(pos + 1)
    let offset = pos * 16
    for (let i = 0; i < id.length; i++) {
      if (id.charCodeAt(i) === DASH) continue
      this.bytes[offset++] = (NIBBLE.get(id.charCodeAt(i))! << 4) | NIBBLE.get(id.charCodeAt(++i))!
    }
    this.known[pos] = 1
  }

  /** Sets the UUID at `pos` from 16 bytes of `source` at `from`. */
  setBytes(pos: number, source: Uint8Array, from: number): void {
    if (pos >= this.known.length) this.grow(pos + 1)
    for (let i = 0, at = pos * 16; i < 16; i++) this.bytes[at + i] = source[from + i]!
    this.known[pos] = 1
  }

  /** Writes the UUID at `pos` into a COPY's data (import-copy.ts), NULL for a position with none. */
  copyTo(data: { uuid(source: Uint8Array, from: number): unknown; null(): unknown }, pos: number): void {
    if (this.known[pos] === 1) data.uuid(this.bytes, pos * 16)
    else data.null()
  }

  /**
   * The UUIDs at `positions` as a '{…}' array literal (cast to uuid[] in SQL), NULL for a
   * position with none (as a mapping table's lookup gives), written into one buffer and decoded
   * once (see uuidText).
   */
  list(positions: readonly number[]): string {
    const text = Buffer.allocUnsafe(2 + positions.length * (UUID_TEXT_LENGTH + 1))
    let at = 0
    text[at++] = 123 // '{'
    for (const [index, pos] of positions.entries()) {
      if (index > 0) text[at++] = COMMA
      if (this.known[pos] !== 1) {
        at += text.write(NULL, at, 'latin1')
        continue
      }
      at = writeUuidText(text, at, this.bytes, pos * 16)
    }
    text[at++] = 125 // '}'
    return text.toString('latin1', 0, at)
  }

  private grow(least: number): void {
    const size = Math.max(least, this.known.length * 2, 1024)
    const bytes = new Uint8Array(size * 16)
    bytes.set(this.bytes)
    const known = new Uint8Array(size)
    known.set(this.known)
    this.bytes = bytes
    this.known = known
  }
}
