// An action asked again before it is done (removing a member, revoking a grant): the question in
// the page, not a browser dialog, with focus on Cancel so that a stray Enter does nothing.
import { useLayoutEffect, useRef } from 'preact/hooks'

export function Confirm({ question, action, onConfirm, onCancel }: { question: string; action: string; onConfirm: () => void; onCancel: () => void }) {
  const cancel = useRef<HTMLButtonElement>(null)
  // In the commit that shows the question: focus never lags behind it.
  useLayoutEffect(() => cancel.current?.focus(), [])
  return (
    <fieldset class="confirm">
      <legend>{question}</legend>
      <button type="button" class="danger" onClick={onConfirm}>
        {action}
      </button>
      <button type="button" ref={cancel} onClick={onCancel}>
        Cancel
      </button>
    </fieldset>
  )
}
