// The one error every stage of the reader throws for a problem with the bundle's content.

export interface BundleErrorWhere {
  section?: string
  position?: number
  /** A media ref, for problems in `images` / `bodies`. */
  key?: string
  /** The prefix when there is no section: 'bundle' (default) or 'gzip'. */
  scope?: 'bundle' | 'gzip'
}

/**
 * A problem with the bundle's content. message = `section[position]: problem`,
 * `section["ref"]: problem`, `section: problem`, or `bundle: problem` / `gzip: problem`.
 */
export class BundleError extends Error {
  override readonly name = 'BundleError'
  readonly section?: string
  readonly position?: number
  readonly key?: string
  readonly problem: string

  constructor(problem: string, where: BundleErrorWhere = {}) {
    const { section, position, key, scope } = where
    let prefix: string
    if (section === undefined) prefix = scope ?? 'bundle'
    else if (position !== undefined) prefix = `${section}[${position}]`
    else if (key !== undefined) prefix = `${section}[${JSON.stringify(key)}]`
    else prefix = section
    super(`${prefix}: ${problem}`)
    this.problem = problem
    if (section !== undefined) this.section = section
    if (position !== undefined) this.position = position
    if (key !== undefined) this.key = key
  }
}

export const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`
export const describeByte = (c: number) =>
  c >= 0x20 && c < 0x7f ? JSON.stringify(String.fromCharCode(c)) : `byte 0x${c.toString(16).padStart(2, '0')}`
