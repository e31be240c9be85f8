// Where a repository's stored media are served (src/media/routes.ts). An imported image fact's
// image_url points at its local copy here (docs/spec/bundle.md §5).

/** The URL of a source image's stored bytes. */
export function localImageUrl(baseUrl: string, repositoryId: string, imageId: string): string {
  return `${baseUrl}/${repositoryId}/images/${imageId}`
}

/** The URL of a source's stored body (a PDF, an HTML page). */
export function localBodyUrl(baseUrl: string, repositoryId: string, sourceId: string): string {
  return `${baseUrl}/${repositoryId}/sources/${sourceId}/body`
}
