// Schemas shared by every feature's routes.
import { t } from 'elysia'

export const ErrorBody = t.Object({ error: t.String() }, { description: 'every error response' })
