// References between sections, shared by the row and vector stages: an index into the
// section being read must name an earlier row; into a section read, one of its rows; into a
// section not read yet (v1: facts.source_image_idx before source_images), it is checked when
// that section ends, or at the end of the document (an absent section has 0 rows). The largest
// such index is remembered with the row that made it.
import type { ReferenceCheck, ZeroExists } from '../compile.ts'
import { BundleError, plural } from './errors.ts'

interface Deferred {
  index: number
  field: string
  section: string
  position: number
}

export class References {
  /** The row section being read, its label for messages, and the position being validated. */
  current: string | undefined
  currentLabel = ''
  currentPosition = 0
  /** Row counts of the sections read completely. */
  private readonly counts = new Map<string, number>()
  private readonly deferred = new Map<string, Deferred>()

  readonly check: ReferenceCheck = (target, index, field) => {
    if (target === this.current) {
      return index < this.currentPosition
        ? undefined
        : `${field} ${index} does not refer to an earlier row (parent must precede)`
    }
    const count = this.counts.get(target)
    if (count !== undefined) return index < count ? undefined : dangling(field, index, target, count)
    const deferred = this.deferred.get(target)
    if (deferred === undefined || index > deferred.index)
      this.deferred.set(target, { index, field, section: this.currentLabel, position: this.currentPosition })
    return undefined
  }

  /**
   * For Go's omitted zeros (schema.ts, x-zero-omitted): row 0 of the current section exists for
   * every row after it; of a section read, if it had rows; of one still to come (version 1's
   * source_images), it may, and the importer links nothing where it turns out not to.
   */
  readonly zeroExists: ZeroExists = (target) => {
    if (target === this.current) return this.currentPosition > 0
    return (this.counts.get(target) ?? 1) > 0
  }

  sectionEnded(section: string, count: number): void {
    this.counts.set(section, count)
    const deferred = this.deferred.get(section)
    if (deferred !== undefined) {
      this.deferred.delete(section)
      if (deferred.index >= count) this.failDangling(section, deferred, count)
    }
  }

  private failDangling(target: string, deferred: Deferred, count: number): never {
    throw new BundleError(dangling(deferred.field, deferred.index, target, count), {
      section: deferred.section,
      position: deferred.position,
    })
  }

  /** At the end of the document: a reference into a section that never came fails. */
  end(): void {
    for (const [target, deferred] of this.deferred) this.failDangling(target, deferred, 0)
  }
}

function dangling(field: string, index: number, target: string, count: number): string {
  return `${field} ${index} refers to a row that does not exist (${target} has ${plural(count, 'row', 'rows')})`
}
