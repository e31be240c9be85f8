// LanceDB at the vector store's edge (store.ts): loading its native library, the Arrow layout of a
// table (`id` the row's UUID and declared the unenforced primary key, `vector` a fixed-size list of
// float32) and rows in and out of it, what its error messages mean, and, in a local directory,
// whether a table's folder is there at all.
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import type { Table } from '@lancedb/lancedb'
import {
  Field,
  FixedSizeList,
  Float32,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table as ArrowTable,
  Utf8,
  vectorFromArray,
  type Vector,
} from 'apache-arrow'
import { runtime } from '../runtime/index.ts'

export interface VectorRow {
  id: string
  vector: Float32Array
}

const PRIMARY_KEY_METADATA = 'lance-schema:unenforced-primary-key'

export function tableSchema(dimensions: number): Schema {
  return new Schema([
    new Field('id', new Utf8(), false, new Map([[PRIMARY_KEY_METADATA, 'true']])),
    new Field('vector', new FixedSizeList(dimensions, new Field('item', new Float32(), true)), false),
  ])
}

/** One Arrow record batch of the rows, the vectors copied into one contiguous float32 buffer. */
export function toArrow(rows: readonly VectorRow[], dimensions: number): ArrowTable {
  const schema = tableSchema(dimensions)
  const values = new Float32Array(rows.length * dimensions)
  rows.forEach((row, i) => values.set(row.vector, i * dimensions))
  const ids = vectorFromArray(
    rows.map((row) => row.id),
    new Utf8(),
  ).data[0]!
  const vectors = makeData({
    type: schema.fields[1]!.type,
    length: rows.length,
    nullCount: 0,
    child: makeData({ type: new Float32(), length: values.length, data: values }),
  })
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children: [ids, vectors] }),
  )
  return new ArrowTable(schema, [batch])
}

export async function tableDimensions(table: Table): Promise<number> {
  const field = (await table.schema()).fields.find((f) => f.name === 'vector')
  return (field!.type as FixedSizeList).listSize
}

/** The rows of a record batch of (id, vector), each vector a copy. */
export function vectorRows(batch: RecordBatch): VectorRow[] {
  // slice(): a copy, so that a kept vector does not pin the whole batch's buffer.
  return Array.from(batchRows(batch), ({ id, vector }) => ({ id, vector: vector.slice() }))
}

/** The rows of a record batch of (id, vector), each vector a view into the batch's buffer. */
export function* batchRows(batch: RecordBatch): Generator<VectorRow> {
  const ids = batch.getChild('id')!
  const vectors = batch.getChild('vector')! as Vector<FixedSizeList<Float32>>
  for (let i = 0; i < batch.numRows; i++)
    yield { id: ids.get(i) as string, vector: vectors.get(i)!.toArray() as Float32Array }
}

/** LanceDB has no error codes: a missing table is told apart by its message only. */
export function isTableNotFound(error: unknown, name: string): boolean {
  return error instanceof Error && error.message.startsWith(`Table '${name}' was not found`)
}

/** A table directory without a committed version (being created by another process, or left so by a crash) holds no rows. */
export function isUncommittedTable(error: unknown, name: string): boolean {
  return (
    error instanceof Error &&
    error.message.startsWith(`Table '${name}' exists but could not be loaded`) &&
    error.message.includes('/_versions')
  )
}

type LanceDB = typeof import('@lancedb/lancedb')
let lancedb: Promise<LanceDB> | undefined

export function loadLanceDB(): Promise<LanceDB> {
  lancedb ??= (async () => {
    const library = await runtime.nativeAddon('lancedb')
    // napi-rs's loader takes the library named here before it looks anywhere else.
    if (library) process.env.NAPI_RS_NATIVE_LIBRARY_PATH = library
    return import('@lancedb/lancedb')
  })()
  lancedb.catch(() => (lancedb = undefined))
  return lancedb
}

/** An object-storage (or other) URI rather than a directory path. */
const URI_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i

/** The directory of a LanceDB URI that is a path (no scheme); undefined for object storage. */
export const localDirectory = (uri: string): string | undefined => (URI_SCHEME.test(uri) ? undefined : uri)

/**
 * Whether table `name` may be in `directory` (its folder is `<name>.lance`): false only when the
 * folder is absent; any other error says maybe, and LanceDB reports it.
 */
export const mayHoldTable = (directory: string, name: string): Promise<boolean> =>
  access(join(directory, `${name}.lance`)).then(
    () => true,
    (error: NodeJS.ErrnoException) => error.code !== 'ENOENT',
  )
