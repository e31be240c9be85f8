// Addresses outside the app as the pages show them.

/** An outside address shown as text with a link that leaves the app (no referrer, no opener). */
export const Outside = ({ url, label }: { url: string; label?: string }) =>
  /^https?:\/\//i.test(url) ? (
    <a href={url} rel="noopener noreferrer nofollow" target="_blank">
      {label || url}
    </a>
  ) : (
    <span>{label || url}</span>
  )
