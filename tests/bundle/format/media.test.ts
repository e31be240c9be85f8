// The reader's media stage: one item per ref, its base64 data decoded as it streams (Go's
// decoder: \/ and \uXXXX escapes, \n and \r ignored, strict padding), data left unread skipped
// and still checked.
import { describe, expect, test } from 'bun:test'
import { newReaderStats } from '../../../src/bundle/format/read/items.ts'
import { MediaDecoder } from '../../../src/bundle/format/read/media.ts'
import { CHUNK_SIZES, drain, scannerOf } from './stages.ts'

const decoder = (text: string, size: number) => {
  const stats = newReaderStats()
  return { media: new MediaDecoder(scannerOf(text, size), stats), stats }
}

describe('media stage', () => {
  test('decodes each item as it streams, whatever the chunking', async () => {
    // [0, 1, 2, 255] is "AAEC/w==", here with a JSON-escaped "/" and an escaped newline inside.
    const text =
      '{"a": {"content_type": "image/png", "x": [1], "data": "AAEC\\n\\/w=="}, "b": null, "c": {"data": "QUJD", "content_type": "late"}, "d": {"data": null}}'
    for (const size of CHUNK_SIZES) {
      const { media, stats } = decoder(text, size)
      expect(await drain(media.section('images'))).toEqual({
        items: [
          { type: 'media', section: 'images', ref: 'a', contentType: 'image/png', data: [0, 1, 2, 255] },
          { type: 'media', section: 'images', ref: 'b', contentType: '', data: null },
          { type: 'media', section: 'images', ref: 'c', contentType: '', data: [...Buffer.from('ABC')] },
          { type: 'media', section: 'images', ref: 'd', contentType: '', data: null },
        ],
      })
      expect(stats.mediaBytes).toBe(7)
    }
  })

  test('bad base64 names the ref and the offset in the data string', async () => {
    const problem = async (data: string) =>
      (await drain(decoder(`{"r": {"data": "${data}"}}`, 3).media.section('bodies'))).error
    expect(await problem('A===')).toBe('bodies["r"]: data is not valid base64 (misplaced padding at offset 1)')
    expect(await problem('AA!A')).toBe('bodies["r"]: data is not valid base64 (unexpected character "!" at offset 2)')
    expect(await problem('QUJDQQ')).toBe(
      'bodies["r"]: data is not valid base64 (the length is not a multiple of 4 at offset 6)',
    )
    expect(await problem('QQ==QQ==')).toBe('bodies["r"]: data is not valid base64 (data after the padding at offset 4)')
  })

  test('data not read is skipped and checked when the next item is asked for; an old item cannot be read', async () => {
    const items = decoder('{"a": {"data": "AA!A"}, "b": null}', 2).media.section('images')
    const first = await items.next()
    expect(first.done).toBe(false)
    let message = ''
    try {
      await items.next()
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toBe('images["a"]: data is not valid base64 (unexpected character "!" at offset 2)')

    const good = decoder('{"a": {"data": "QUJD"}, "b": null}', 2).media.section('images')
    const a = (await good.next()).value![0]!
    await good.next()
    if (a.type !== 'media' || !a.data) throw new Error('expected a media item with data')
    let late = ''
    try {
      for await (const _ of a.data) break
    } catch (error) {
      late = (error as Error).message
    }
    expect(late).toBe('media data can only be read before the next bundle item is requested')
  })
})
