// One compiled codec per row section and one for the metadata, made once at start-up.
import { compileRowCodec, type RowCodec } from './compile.ts'
import { Metadata, ROW_SCHEMAS, ROW_SECTIONS, type Row, type RowSection } from './schema.ts'

export const ROW_CODECS = Object.fromEntries(
  ROW_SECTIONS.map((section) => [section, compileRowCodec(ROW_SCHEMAS[section])]),
) as {
  [S in RowSection]: RowCodec<Row<S>>
}

export const METADATA_CODEC: RowCodec<Metadata> = compileRowCodec(Metadata)
