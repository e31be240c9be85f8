// The reader's media stage: an `images` or `bodies` section, one item per ref, each item's
// base64 `data` decoded as it streams from the scanner's buffer (never held whole). Decoding
// follows Go's decoder: JSON escapes \/ and \uXXXX stand for their characters, \n and \r
// are ignored, padding is strict. `content_type` must come before `data` (Go's order) to be
// reported; data the consumer did not read is skipped (and still checked) when the reader resumes.
import { describeByte } from './errors.ts'
import type { BundleItem, ReaderStats } from './items.ts'
import { BACKSLASH, OPEN_BRACE, QUOTE, type JsonCursor } from './cursor.ts'
import type { MediaSection } from '../schema.ts'

/** Standard base64 alphabet → 0..63; 64 '='; -1 anything else. */
const BASE64 = new Int8Array(256).fill(-1)
for (let i = 0; i < 64; i++)
  BASE64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i
BASE64[0x3d] = 64

export class MediaDecoder {
  // Media data being streamed.
  private dataActive = false
  /** Which media item's data is being read (an old item's iterable must not read the next). */
  private dataId = 0
  private dataEnded = false
  private dataBusy = false
  private dataAcc = 0
  private dataCount = 0
  private dataPad = 0
  private dataFinal = false
  /** Absolute offset of the data string's first character (for messages). */
  private dataStart = 0
  private dataError: unknown
  /** Output of skipped media data. */
  private scratch = new Uint8Array(0)

  constructor(
    private readonly s: JsonCursor,
    private readonly stats: ReaderStats,
  ) {}

  async *section(section: MediaSection): AsyncGenerator<BundleItem[], void, undefined> {
    this.s.setContext(section)
    if ((await this.s.nullOr(OPEN_BRACE, 'an object')) || (await this.s.objectOpen(section))) return
    do {
      this.s.setContext(section)
      const ref = await this.s.readKey(2)
      this.s.setContext(section, undefined, ref)
      if (await this.s.nullOr(OPEN_BRACE, 'an object')) {
        yield [{ type: 'media', section, ref, contentType: '', data: null }]
        continue
      }
      let contentType = ''
      let yielded = false
      if (!(await this.s.objectOpen(JSON.stringify(ref)))) {
        do {
          const field = await this.s.readKey(3)
          if (field === 'content_type') {
            const value = await this.s.readValue(3, this.s.limits.maxStringBytes)
            if (typeof value !== 'string') this.s.fail('content_type must be a string')
            if (!yielded) contentType = value
          } else if (field === 'data' && !yielded) {
            yielded = true
            if ((await this.s.next()) !== QUOTE) {
              if ((await this.s.readValue(3, 16)) !== null) this.s.fail('data must be a base64 string')
              yield [{ type: 'media', section, ref, contentType, data: null }]
              continue
            }
            this.s.seek(this.s.pos + 1)
            this.startData()
            yield [{ type: 'media', section, ref, contentType, data: this.dataIterable() }]
            await this.finishData()
            this.s.setContext(section, undefined, ref)
          } else {
            await this.s.skipValue(3)
          }
        } while (await this.s.objectMore(JSON.stringify(ref)))
      }
      if (!yielded) yield [{ type: 'media', section, ref, contentType, data: null }]
    } while (await this.s.objectMore(section))
    this.s.setContext()
  }

  private startData(): void {
    this.dataActive = true
    this.dataEnded = false
    this.dataAcc = 0
    this.dataCount = 0
    this.dataPad = 0
    this.dataFinal = false
    this.dataStart = this.s.offset()
    this.dataError = undefined
  }

  private dataIterable(): AsyncIterable<Uint8Array> {
    const id = ++this.dataId
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<Uint8Array>> => {
          if (!this.dataActive || this.dataId !== id)
            throw new Error('media data can only be read before the next bundle item is requested')
          if (this.dataBusy) throw new Error('media data is already being read')
          this.dataBusy = true
          try {
            const chunk = await this.dataNext(true)
            return chunk ? { value: chunk, done: false } : { value: undefined, done: true }
          } finally {
            this.dataBusy = false
          }
        },
        return: async (): Promise<IteratorResult<Uint8Array>> => ({ value: undefined, done: true }),
      }),
    }
  }

  /** Called when the reader resumes after a media item: skips (and checks) what was not read. */
  private async finishData(): Promise<void> {
    if (this.dataBusy) throw new Error('the next bundle item was requested while media data was still being read')
    try {
      while ((await this.dataNext(false)) !== null) {
        // skipping
      }
    } finally {
      this.dataActive = false
    }
  }

  private badData(problem: string, at: number): never {
    const error = this.s.error(`data is not valid base64 (${problem} at offset ${this.s.offset(at) - this.dataStart})`)
    this.dataError = error
    throw error
  }

  /**
   * Decodes the next stretch of the base64 string at the cursor: the bytes (emit), an empty
   * array (skip), or null once the string has ended. The 4-character alignment across chunks
   * is kept in dataAcc/dataCount; consumed input is released from the buffer as it goes.
   */
  private async dataNext(emit: boolean): Promise<Uint8Array | null> {
    if (this.dataError !== undefined) throw this.dataError
    for (;;) {
      if (this.dataEnded) return null
      const b = this.s.buf
      const end = this.s.len
      let i = this.s.pos
      if (i < end) {
        const q = this.s.view.indexOf(QUOTE, i)
        const stop = q < 0 ? end : q
        const size = (((stop - i) >> 2) + 2) * 3
        let out: Uint8Array
        if (emit) out = new Uint8Array(size)
        else {
          if (this.scratch.length < size) this.scratch = new Uint8Array(size)
          out = this.scratch
        }
        let o = 0
        let acc = this.dataAcc
        let count = this.dataCount
        let needMore = false
        while (i < stop) {
          if (count === 0 && this.dataPad === 0) {
            // The hot loop: whole quartets of alphabet characters.
            while (i + 4 <= stop) {
              const c0 = BASE64[b[i]!]!
              const c1 = BASE64[b[i + 1]!]!
              const c2 = BASE64[b[i + 2]!]!
              const c3 = BASE64[b[i + 3]!]!
              if ((c0 | c1 | c2 | c3) < 0 || c0 > 63 || c1 > 63 || c2 > 63 || c3 > 63) break
              const v = (c0 << 18) | (c1 << 12) | (c2 << 6) | c3
              out[o++] = v >> 16
              out[o++] = (v >> 8) & 255
              out[o++] = v & 255
              i += 4
            }
            if (i >= stop) break
          }
          let ch = b[i]!
          let width = 1
          if (ch === BACKSLASH) {
            // JSON escapes: \/ and \uXXXX stand for characters; \n and \r are ignored, as by
            // Go's base64 decoder. An escape cut by the end of the buffer waits for more bytes.
            const e = i + 1 < stop ? b[i + 1]! : -1
            width = e === 0x75 ? 6 : 2
            if (i + width > stop) {
              if (q >= 0) this.badData('incomplete escape', i)
              needMore = true
              break
            }
            if (e === 0x2f) ch = 0x2f
            else if (e === 0x6e || e === 0x72) ch = 0x0a
            else if (e === 0x75) {
              const code = parseInt(String.fromCharCode(b[i + 2]!, b[i + 3]!, b[i + 4]!, b[i + 5]!), 16)
              if (!(code >= 0 && code < 0x80)) this.badData('unexpected escaped character', i)
              ch = code === 0x0d ? 0x0a : code
            } else this.badData(`unexpected escape \\${String.fromCharCode(e)}`, i)
            if (ch === 0x0a) {
              i += width
              continue
            }
          }
          const v = BASE64[ch]!
          if (v < 0) this.badData(`unexpected character ${describeByte(ch)}`, i)
          if (this.dataFinal) this.badData('data after the padding', i)
          if (v === 64) {
            if (count < 2) this.badData('misplaced padding', i)
            if (++this.dataPad + count === 4) {
              // 2 characters carry 1 byte, 3 carry 2.
              if (count === 2) out[o++] = (acc >> 4) & 255
              else {
                out[o++] = (acc >> 10) & 255
                out[o++] = (acc >> 2) & 255
              }
              this.dataFinal = true
            }
          } else {
            if (this.dataPad > 0) this.badData('data after the padding', i)
            acc = (acc << 6) | v
            if (++count === 4) {
              out[o++] = (acc >> 16) & 255
              out[o++] = (acc >> 8) & 255
              out[o++] = acc & 255
              acc = count = 0
            }
          }
          i += width
        }
        if (this.dataFinal) count = 0
        this.dataAcc = acc
        this.dataCount = count
        this.s.seek(i)
        if (!needMore && q >= 0) {
          if (count !== 0 || (this.dataPad > 0 && !this.dataFinal)) this.badData('the length is not a multiple of 4', i)
          this.s.seek(q + 1)
          this.dataEnded = true
        }
        this.stats.mediaBytes += o
        if (emit && o > 0) return out.subarray(0, o)
        if (this.dataEnded) return null
        if (o > 0) return out.subarray(0, 0)
      }
      if (!(await this.s.fill())) this.s.truncated()
    }
  }
}
