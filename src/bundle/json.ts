// JSON values written the way Go's encoding/json writes them (bundle.md §3). The canonical
// hash is over these bytes, and the other implementation of the format is in Go, so every
// byte must agree; no library reproduces Go's rules, hence this file.
//
// Strings: JSON.stringify already escapes `"`, `\`, \b \f \n \r \t and other controls as
// lowercase \u00xx, exactly as Go does; Go also escapes < > & U+2028 U+2029 (HTML-safe) and
// replaces lone surrogates with U+FFFD, which we do before and after it. Most strings need
// none of this, and one regular-expression test lets them through untouched.
// Numbers: JavaScript and Go both write the shortest round-trip digits and switch to exponent
// form outside [1e-6, 1e21) with the same spelling (1e-7, 1e+21); only -0 differs.

const NEEDS_ESCAPE = /[\u0000-\u001f"\\<>&\u2028\u2029\ud800-\udfff]/
const HTML_SAFE = /[<>&\u2028\u2029]/g
const HTML_ESCAPES: Record<string, string> = { '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028', '\u2029': '\\u2029' }
const htmlEscape = (c: string) => HTML_ESCAPES[c]!

export function encodeString(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return `"${value}"`
  return JSON.stringify(value.toWellFormed()).replace(HTML_SAFE, htmlEscape)
}

export class UnsupportedNumberError extends Error {}

function checkFinite(value: number): void {
  if (!Number.isFinite(value)) throw new UnsupportedNumberError(`json: unsupported value: ${value}`)
}

/** A float64 as Go writes it: shortest round-trip digits, `-0` kept. NaN and ±Inf are errors, as in Go. */
export function encodeFloat64(value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0' : '0'
  checkFinite(value)
  return String(value)
}

/**
 * A float32 as Go writes it: the shortest decimal that reads back as the same float32
 * (`0.1`, `0.33333334`), where the float64 digits of the same value would be twice as long.
 */
export function encodeFloat32(input: number): string {
  const value = Math.fround(input)
  if (value === 0) return Object.is(value, -0) ? '-0' : '0'
  checkFinite(value)
  // p digits read back exactly ⇒ p+1 digits do too (the nearest p-digit decimal is also a
  // (p+1)-digit one), so binary search finds the fewest; 9 digits always suffice for float32.
  let low = 1
  let high = 9
  while (low < high) {
    const middle = (low + high) >> 1
    if (Math.fround(Number(value.toPrecision(middle))) === value) high = middle
    else low = middle + 1
  }
  let shortest = Number(value.toPrecision(high))
  if (high > 1 && isPowerOfTwo(value)) shortest = shorterAcrossPowerOfTwo(value, high - 1) ?? shortest
  // The digits fit a float64 exactly enough that String() gives them back, and JavaScript's
  // thresholds for exponent form match Go's float32 ones on every float32 (see the tests).
  return String(shortest)
}

const float32View = new Float32Array(1)
const bitsView = new Uint32Array(float32View.buffer)
function isPowerOfTwo(value: number): boolean {
  float32View[0] = value
  return (bitsView[0]! & 0x7fffff) === 0
}

/**
 * Below a power of two the float32 spacing halves, so the nearest p-digit decimal can fall
 * outside the value's rounding interval while its neighbour on the wide side falls inside.
 * Go's shortest formatting finds that neighbour; so do we, preferring the nearer if both fit.
 */
function shorterAcrossPowerOfTwo(value: number, digits: number): number | undefined {
  const nearest = Number(value.toPrecision(digits))
  const exponent = Math.floor(Math.log10(Math.abs(nearest)))
  const unit = 10 ** (exponent - digits + 1)
  let best: number | undefined
  for (const candidate of [nearest - unit, nearest + unit]) {
    const decimal = Number(candidate.toPrecision(digits))
    if (Math.fround(decimal) !== value) continue
    if (best === undefined || Math.abs(decimal - value) < Math.abs(best - value)) best = decimal
  }
  return best
}
