// The shape of a UUID as text, for TypeBox patterns and checks alike: routes, jobs and stores use it.
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID = new RegExp(UUID_PATTERN)

/** Whether `text` is a UUID (UUID_PATTERN: any hex digits, either case). */
export const isUuid = (text: string): boolean => UUID.test(text)

/** The length of a UUID's text. */
export const UUID_TEXT_LENGTH = 36

/** Each byte's two lower-case hex digits, as character codes. */
const HEX_DIGITS = Uint8Array.from({ length: 512 }, (_, i) =>
  '0123456789abcdef'.charCodeAt(i % 2 === 0 ? i >> 5 : (i >> 1) & 15),
)
/** Whether a dash follows each of a UUID's 16 bytes in its text. */
const DASH_AFTER = Uint8Array.from({ length: 16 }, (_, i) => (i === 3 || i === 5 || i === 7 || i === 9 ? 1 : 0))
const DASH = 45

/** Writes the UUID of the 16 bytes of `source` at `from` as lower-case text into `target` at `at`; the offset after it. */
export function writeUuidText(target: Uint8Array, at: number, source: Uint8Array, from: number): number {
  for (let i = 0; i < 16; i++) {
    const byte = source[from + i]!
    target[at++] = HEX_DIGITS[byte * 2]!
    target[at++] = HEX_DIGITS[byte * 2 + 1]!
    if (DASH_AFTER[i] === 1) target[at++] = DASH
  }
  return at
}

/**
 * The UUID of 16 bytes as lower-case text, decoded from one buffer: a string concatenated from
 * parts is a rope, which every later search of it flattens again.
 */
export function uuidText(source: Uint8Array, from = 0): string {
  const text = Buffer.allocUnsafe(UUID_TEXT_LENGTH)
  writeUuidText(text, 0, source, from)
  return text.toString('latin1')
}
