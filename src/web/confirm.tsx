// An action asked again before it is done (removing a member, revoking a grant, deleting a row): the question in
// the page, not a browser dialog, with focus on Cancel so that a stray Enter does nothing.
import type { ComponentChildren } from 'preact'
import { useLayoutEffect, useRef } from 'preact/hooks'

/** `children`, when given, say what the action takes with it. */
export function Confirm({ question, action, onConfirm, onCancel, children }: { question: string; action: string; onConfirm: () => void; onCancel: () => void; children?: ComponentChildren }) {
  const cancel = useRef<HTMLButtonElement>(null)
  // In the commit that shows the question: focus never lags behind it.
  useLayoutEffect(() => cancel.current?.focus(), [])
  return (
    <fieldset class="confirm">
      <legend>{question}</legend>
      {children && <p>{children}</p>}
      <button type="button" class="danger" onClick={onConfirm}>
        {action}
      </button>
      <button type="button" ref={cancel} onClick={onCancel}>
        Cancel
      </button>
    </fieldset>
  )
}
