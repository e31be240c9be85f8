// A sysadmin's making of accounts, whatever REGISTRATION says: an account made outright (as
// `kgs user create` makes one), and the invitations that REGISTRATION=invite asks for.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import type { accessControl } from '../http/access.ts'
import { HttpError } from '../http/errors.ts'
import { pagination } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { Accounts } from './accounts.ts'
import {
  createInvitation,
  deleteInvitation,
  INVITATION_DAYS_DEFAULT,
  INVITATION_DAYS_MAX,
  listInvitations,
  OPEN_INVITATIONS_MAX,
} from './invitations.ts'
import { Email, Name, Password, User } from './schemas.ts'
import { normalizeEmail } from './users.ts'

const strict = { additionalProperties: false } as const
const Invitation = t.Object({
  id: t.String({ format: 'uuid' }),
  email: t.String(),
  created_at: t.String(),
  expires_at: t.String(),
})
/** A JSON body: invalid (400), too large (413), of another type (415). */
const bodyErrors = { 400: ErrorBody, 413: ErrorBody, 415: ErrorBody }

export interface AccountAdminRoutesOptions {
  accounts: Accounts
  system: Sql
  access: ReturnType<typeof accessControl>
}

export function accountAdminRoutes({ accounts, system, access }: AccountAdminRoutesOptions) {
  return new Elysia({ name: 'kgs/account-admin', prefix: '/api/v1/admin' })
    .use(access)
    .use(pagination)
    .post(
      '/users',
      async ({ body, set }) => {
        const user = await accounts.createAccount(body)
        set.status = 201
        return user
      },
      {
        permission: 'user:manage',
        body: t.Object({ email: Email, password: Password, name: t.Optional(Name) }, strict),
        response: { 201: User, ...bodyErrors, 409: ErrorBody, 503: ErrorBody },
        detail: {
          tags: ['admin'],
          summary:
            'Create an account (a member of the system domain), whatever REGISTRATION says; the person signs in with this password',
        },
      },
    )
    .post(
      '/invitations',
      async ({ principal, body, set }) => {
        const email = normalizeEmail(body.email)
        if (!email) throw new HttpError(400, 'invalid body: email: expected an e-mail address')
        const outcome = await createInvitation(system, {
          email,
          days: body.expires_in_days ?? INVITATION_DAYS_DEFAULT,
          createdBy: principal.userId,
        })
        if (outcome.kind === 'registered') throw new HttpError(409, 'e-mail address already registered')
        if (outcome.kind === 'too-many')
          throw new HttpError(
            409,
            `${OPEN_INVITATIONS_MAX} invitations are open already: revoke some, or let them expire`,
          )
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return { ...outcome.invitation, code: outcome.code }
      },
      {
        permission: 'user:manage',
        body: t.Object(
          {
            email: Email,
            expires_in_days: t.Optional(
              t.Integer({
                minimum: 1,
                maximum: INVITATION_DAYS_MAX,
                description: `default ${INVITATION_DAYS_DEFAULT}`,
                error: `expected a whole number of days from 1 to ${INVITATION_DAYS_MAX}`,
              }),
            ),
          },
          strict,
        ),
        response: {
          201: t.Composite([
            Invitation,
            t.Object({
              code: t.String({
                description: 'give it to the person: they register with it; shown only here, stored only as a digest',
              }),
            }),
          ]),
          ...bodyErrors,
          409: ErrorBody,
        },
        detail: {
          tags: ['admin'],
          summary: `Invite an e-mail address to register (REGISTRATION=invite): single use, expiring; replaces an earlier invitation of that address; at most ${OPEN_INVITATIONS_MAX} open`,
        },
      },
    )
    .get('/invitations', ({ page }) => listInvitations(system, page.limit, page.after), {
      permission: 'user:read',
      paginated: true,
      response: { 200: t.Array(Invitation), 400: ErrorBody },
      detail: {
        tags: ['admin'],
        summary: 'The invitations not yet used or expired, oldest first (paginated; never their codes)',
      },
    })
    .delete(
      '/invitations/:invitationID',
      async ({ params }) => {
        const invitation = await deleteInvitation(system, params.invitationID.toLowerCase())
        if (!invitation) throw new HttpError(404, 'invitation not found')
        return invitation
      },
      {
        permission: 'user:manage',
        params: t.Object({ invitationID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) }),
        response: { 200: Invitation, 400: ErrorBody, 404: ErrorBody },
        detail: { tags: ['admin'], summary: 'Revoke an open invitation: its code stops working' },
      },
    )
}
