// Media types we store and serve. A type comes from a bundle or a fetched server, so it is
// checked before it is kept (no control characters: it becomes a response header), and only
// raster images are shown inline from the API's origin: HTML, SVG, PDF and the rest could run
// script or be mistaken for our own pages, so they are served as downloads.

/** type/subtype, optionally parameters of printable ASCII (RFC 9110 §8.3.1). */
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(\s*;[\x20-\x7e]*)?$/i
const MEDIA_TYPE_MAX = 255

/** Images a browser renders as pixels only. */
const INLINE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/bmp'])

export function isMediaType(text: string): boolean {
  return text.length <= MEDIA_TYPE_MAX && MEDIA_TYPE.test(text)
}

/** Content-Type and Content-Disposition of stored bytes whose recorded type is `contentType`. */
export function servedAs(contentType: string): { type: string; disposition: 'inline' | 'attachment' } {
  // Rows stored before types were checked may hold anything: never let one into a header.
  const type = isMediaType(contentType) ? contentType : 'application/octet-stream'
  const essence = type.split(';', 1)[0]!.trim().toLowerCase()
  return { type, disposition: INLINE_TYPES.has(essence) ? 'inline' : 'attachment' }
}
