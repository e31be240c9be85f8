// Schemas shared by every feature's routes.
import { t } from 'elysia'

export const ErrorBody = t.Object({ error: t.String() }, { description: 'every error response' })

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
