// What the pages that change a list (Members, Users and roles, Connected agents) share: one change
// at a time with its outcome said above the list, the list read again after each change (done or
// refused), a confirmation asked in the page before a removal, the picker of a role and the
// e-mail field.
import type { SelectHTMLAttributes } from 'preact'
import { useState } from 'preact/hooks'
import { Confirm } from './confirm.tsx'
import { ErrorBox } from './ui.tsx'

interface Outcome {
  error?: unknown
  done?: string
}

/**
 * `change(send)` does one change, `send` answering what to say once it is done; it returns
 * whether it was. `round` counts the changes: a list keyed on it is read again after each.
 */
export function useChanges() {
  const [round, setRound] = useState(0)
  const [outcome, setOutcome] = useState<Outcome>({})
  const change = async (send: () => Promise<string>) => {
    setOutcome({})
    try {
      setOutcome({ done: await send() })
      return true
    } catch (error) {
      setOutcome({ error })
      return false
    } finally {
      setRound((n) => n + 1)
    }
  }
  return { round, outcome, change }
}

/** What the last change came to: the API's refusal, or what was done. */
export function OutcomeLine({ outcome }: { outcome: Outcome }) {
  return (
    <>
      {outcome.error !== undefined && <ErrorBox error={outcome.error} />}
      {outcome.done && <p role="status">{outcome.done}</p>}
    </>
  )
}

/**
 * A confirmation about one subject at a time: `ask(subject)` puts the question (worded by
 * `words`) in `question`, null while none is asked; confirming closes it and runs `onConfirm`.
 */
export function useConfirm<T>(
  words: (subject: T) => { question: string; action: string },
  onConfirm: (subject: T) => unknown,
) {
  const [subject, setSubject] = useState<T>()
  const question =
    subject === undefined ? null : (
      <Confirm
        {...words(subject)}
        onConfirm={() => {
          setSubject(undefined)
          void onConfirm(subject)
        }}
        onCancel={() => setSubject(undefined)}
      />
    )
  return { ask: (next: T) => setSubject(() => next), question }
}

/**
 * A select of roles, in groups: a group with a label stands under it, one without as it is.
 * `placeholder`, when given, is an empty first choice that a required select makes the person replace.
 */
export function RoleSelect({
  value,
  onChoose,
  groups,
  placeholder,
  ...attributes
}: {
  value: string
  onChoose: (role: string) => void
  groups: readonly { label?: string; roles: readonly string[] }[]
  placeholder?: string
} & Omit<SelectHTMLAttributes, 'value' | 'onChange'>) {
  return (
    <select {...attributes} value={value} onChange={(event) => onChoose((event.target as HTMLSelectElement).value)}>
      {placeholder !== undefined && <option value="">{placeholder}</option>}
      {groups.map(({ label, roles }) => {
        const options = roles.map((role) => (
          <option key={role} value={role}>
            {role}
          </option>
        ))
        return label === undefined ? (
          options
        ) : (
          <optgroup key={label} label={label}>
            {options}
          </optgroup>
        )
      })}
    </select>
  )
}

/** The e-mail address of the person a change names (as long as the API takes one). */
export function EmailField({ value, onInput }: { value: string; onInput: (email: string) => void }) {
  return (
    <label>
      E-mail{' '}
      <input
        type="email"
        required
        maxLength={254}
        value={value}
        onInput={(event) => onInput((event.target as HTMLInputElement).value)}
      />
    </label>
  )
}
