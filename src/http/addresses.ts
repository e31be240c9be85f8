// Which IP addresses the media fetcher may connect to: only public unicast ones, so that a URL in
// a bundle cannot make the server reach its own loopback, its private network or a cloud
// metadata service (SSRF). IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are
// judged by that address; anything that does not parse is refused.
import { isIPv4, isIPv6 } from 'node:net'

interface Range {
  bytes: Uint8Array
  prefix: number
  kind: string
}

/** The special-purpose ranges of the IANA registries that are not reachable public unicast. */
const IPV4_RANGES = ranges([
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared (CGNAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
])

/** Checked in order, after the IPv4-carrying forms; every address outside 2000::/3 is refused too. */
const IPV6_RANGES = ranges([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fc00::/7', 'private'],
  ['fe80::/10', 'link-local'],
  ['ff00::/8', 'multicast'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'],
  // IETF protocol assignments, Teredo (2001::/32) among them: its IPv4 address is obfuscated.
  ['2001::/23', 'reserved'],
])
const GLOBAL_UNICAST = ranges([['2000::/3', '']])[0]!

/** IPv6 forms whose IPv4 address the connection ends up at, and where that address sits. */
const IPV4_CARRIERS: { range: Range; offset: number }[] = [
  { range: ranges([['::ffff:0:0/96', 'IPv4-mapped']])[0]!, offset: 12 },
  { range: ranges([['64:ff9b::/96', 'NAT64']])[0]!, offset: 12 },
  { range: ranges([['2002::/16', '6to4']])[0]!, offset: 2 },
]

function ranges(list: [cidr: string, kind: string][]): Range[] {
  return list.map(([cidr, kind]) => {
    const [address, prefix] = cidr.split('/') as [string, string]
    return { bytes: parseAddress(address)!, prefix: Number(prefix), kind }
  })
}

function inRange(bytes: Uint8Array, range: Range): boolean {
  if (bytes.length !== range.bytes.length) return false
  const whole = range.prefix >> 3
  for (let i = 0; i < whole; i++) if (bytes[i] !== range.bytes[i]) return false
  const bits = range.prefix & 7
  if (bits === 0) return true
  const mask = (0xff << (8 - bits)) & 0xff
  return (bytes[whole]! & mask) === (range.bytes[whole]! & mask)
}

/**
 * Why `address` (an IPv4 or IPv6 address in text form, as a resolver or the URL parser gives
 * it) is not a public unicast address, e.g. "loopback" or "IPv4-mapped private"; undefined
 * when it is one.
 */
export function nonPublicKind(address: string): string | undefined {
  const bytes = parseAddress(address)
  if (!bytes) return 'unrecognised'
  if (bytes.length === 4) return IPV4_RANGES.find((range) => inRange(bytes, range))?.kind
  for (const { range, offset } of IPV4_CARRIERS) {
    if (!inRange(bytes, range)) continue
    const inner = nonPublicKind(bytes.subarray(offset, offset + 4).join('.'))
    return inner && `${range.kind} ${inner}`
  }
  const kind = IPV6_RANGES.find((range) => inRange(bytes, range))?.kind
  if (kind) return kind
  // IPv4-compatible (::a.b.c.d, deprecated), SIIT and the rest of the unassigned space.
  return inRange(bytes, GLOBAL_UNICAST) ? undefined : 'reserved'
}

/** The 4 or 16 bytes of an address in text form (an IPv6 zone is ignored), or undefined. */
function parseAddress(text: string): Uint8Array | undefined {
  const address = text.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '')
  if (isIPv4(address)) return Uint8Array.from(address.split('.').map(Number))
  if (!isIPv6(address)) return undefined
  // A trailing dotted quad is the last 32 bits.
  const quad = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(address)
  let hex = address
  if (quad) {
    const [a, b, c, d] = quad[2]!.split('.').map(Number) as [number, number, number, number]
    hex = `${quad[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = hex.split('::') as [string, string | undefined]
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)))
  const left = groups(head)
  const right = tail === undefined ? [] : groups(tail)
  const all = tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
  const bytes = new Uint8Array(16)
  all.forEach((group, i) => {
    bytes[2 * i] = group >> 8
    bytes[2 * i + 1] = group & 0xff
  })
  return bytes
}
