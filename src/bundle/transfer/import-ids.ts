// The local UUIDs of an import's largest sections by bundle position (import-rows.ts): the link
// sections send these instead of having PostgreSQL probe a mapping table per row.

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))
const NIBBLE = new Map([...'0123456789abcdefABCDEF'].map((digit) => [digit.charCodeAt(0), Number.parseInt(digit, 16)]))

/** UUIDs by position, 16 bytes each (a million take 16 MB, where strings would take several times that). */
export class LocalIds {
  private bytes = new Uint8Array(0)
  private known = new Uint8Array(0)

  set(pos: number, id: string): void {
    if (pos >= this.known.length) this.grow(pos + 1)
    let offset = pos * 16
    for (let i = 0; i < id.length; i++) {
      if (id.charCodeAt(i) === 45) continue // '-'
      this.bytes[offset++] = (NIBBLE.get(id.charCodeAt(i))! << 4) | NIBBLE.get(id.charCodeAt(++i))!
    }
    this.known[pos] = 1
  }

  /** The UUID at `pos`; null for a position with none (as a mapping table's lookup gives NULL). */
  get(pos: number): string | null {
    if (this.known[pos] !== 1) return null
    const b = this.bytes
    const o = pos * 16
    const hex = (from: number, to: number) => {
      let text = ''
      for (let i = o + from; i < o + to; i++) text += HEX[b[i]!]
      return text
    }
    return `${hex(0, 4)}-${hex(4, 6)}-${hex(6, 8)}-${hex(8, 10)}-${hex(10, 16)}`
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
