// The app's own paths of a repository's pages, which its links lead to.

/** The app's paths of one repository. */
export const paths = (repo: string) => {
  const base = `/app/r/${encodeURIComponent(repo)}`
  return {
    base,
    fact: (id: string) => `${base}/facts/${id}`,
    concept: (id: string) => `${base}/concepts/${id}`,
    source: (id: string) => `${base}/sources/${id}`,
    investigation: (id: string) => `${base}/investigations/${id}`,
    report: (id: string) => `${base}/reports/${id}`,
    cited: (kind: 'fact' | 'concept', id: string) => `${base}/${kind}s/${id}`,
  }
}
