// An action asked again before it is done (removing a member, revoking a grant, deleting a row): the question in
// the page, not a browser dialog, with focus on Cancel so that a stray Enter does nothing.
import type { ComponentChildren } from 'preact'
import { useLayoutEffect, useRef } from 'preact/hooks'

/** `children`, when given, say what the action takes with it; `busy`, while it is under way, what the disabled button says. */
export function Confirm({
  question,
  action,
  busy,
  onConfirm,
  onCancel,
  children,
}: {
  question: string
  action: string
  busy?: string | false
  onConfirm: () => void
  onCancel: () => void
  children?: ComponentChildren
}) {
  const cancel = useRef<HTMLButtonElement>(null)
  // In the commit that shows the question: focus never lags behind it.
  useLayoutEffect(() => cancel.current?.focus(), [])
  return (
    <fieldset class="confirm">
      <legend>{question}</legend>
      {children && <p>{children}</p>}
      <button type="button" class="danger" disabled={!!busy} onClick={onConfirm}>
        {busy || action}
      </button>
      <button type="button" ref={cancel} onClick={onCancel}>
        Cancel
      </button>
    </fieldset>
  )
}
