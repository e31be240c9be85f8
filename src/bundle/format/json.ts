// JSON values written the way Go's encoding/json writes them (docs/spec/bundle.md §3). The canonical
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
const HTML_ESCAPES: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
}
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
  // (p+1)-digit one), so the fewest can be searched for; 9 always suffice for float32. Most
  // values (embeddings) need 7 or 8, so those are tried first: about two tries per value.
  const exponent = decimalExponent(value)
  const fits = (digits: number) => Math.fround(nearestDecimal(value, digits, exponent)) === value
  let digits: number
  if (!fits(7)) digits = fits(8) ? 8 : 9
  else if (!fits(6)) digits = 7
  else {
    let low = 1
    digits = 6
    while (low < digits) {
      const middle = (low + digits) >> 1
      if (fits(middle)) digits = middle
      else low = middle + 1
    }
  }
  let shortest = nearestDecimal(value, digits, exponent)
  if (digits > 1 && isPowerOfTwo(value)) shortest = shorterAcrossPowerOfTwo(value, digits - 1) ?? shortest
  // The digits fit a float64 exactly enough that String() gives them back, and JavaScript's
  // thresholds for exponent form match Go's float32 ones on every float32 (see the tests).
  return String(shortest)
}

/** Exact powers of ten: every 10^k with k ≤ 22 is a float64. */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k)

/** floor(log10(|value|)), corrected where Math.log10 rounds across a power of ten. */
function decimalExponent(value: number): number {
  const magnitude = Math.abs(value)
  let exponent = Math.floor(Math.log10(magnitude))
  if (magnitude < 10 ** exponent) exponent--
  else if (magnitude >= 10 ** (exponent + 1)) exponent++
  return exponent
}

/**
 * The p-digit decimal nearest to value, as the float64 that `Number(value.toPrecision(p))`
 * gives. Scaling by an exact power of ten and rounding is a third of the cost of
 * toPrecision; a product within reach of a rounding tie falls back to it.
 */
function nearestDecimal(value: number, digits: number, exponent: number): number {
  const shift = digits - 1 - exponent
  const magnitude = Math.abs(value)
  if (shift >= 0 && shift <= 22) {
    const scaled = magnitude * POW10[shift]!
    const fraction = scaled - Math.floor(scaled)
    if (Math.abs(fraction - 0.5) > 1e-6) return Math.sign(value) * (Math.round(scaled) / POW10[shift]!)
  } else if (shift < 0 && shift >= -22) {
    const scaled = magnitude / POW10[-shift]!
    const fraction = scaled - Math.floor(scaled)
    if (Math.abs(fraction - 0.5) > 1e-6) return Math.sign(value) * (Math.round(scaled) * POW10[-shift]!)
  }
  return Number(value.toPrecision(digits))
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
