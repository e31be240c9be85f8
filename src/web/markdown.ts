// Markdown from bundles, users and agents, rendered inert: micromark escapes any HTML in the
// source and drops unsafe link targets, and DOMPurify then removes anything executable that
// could remain, so no text ever becomes markup that runs. Citations [text](<fact:UUID>) and
// [text](<concept:UUID>) link to the fact's or the concept's page. A link into the app whose path
// does not route (routes.ts) is no link at all, and the text's headings go below the page's own.
import DOMPurify from 'dompurify'
import { micromark } from 'micromark'
import { appHref, leadsIntoApp } from './routes.ts'

const CITATION = /\(<(fact|concept):([0-9a-fA-F-]{36})>\)/g

/** The app's page of a cited fact or concept. */
export type CitationHref = (kind: 'fact' | 'concept', id: string) => string

export interface SentenceLink {
  text: string
  href: string
  title: string
}

/**
 * The Markdown as a sanitized fragment; each sentence of `links` found in one text node becomes a
 * link. `under`: the heading level the text sits under; its `#` becomes one level below that.
 */
export function renderMarkdown(
  source: string,
  href: CitationHref,
  links: SentenceLink[] = [],
  under = 1,
): DocumentFragment {
  const cited = source.replace(
    CITATION,
    (_, kind: 'fact' | 'concept', id: string) => `(${href(kind, id.toLowerCase())})`,
  )
  const fragment = DOMPurify.sanitize(micromark(cited), {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button'],
  })
  for (const anchor of fragment.querySelectorAll('a[href]')) {
    const target = anchor.getAttribute('href')!
    if (leadsIntoApp(target) && !appHref(target)) anchor.removeAttribute('href')
  }
  demoteHeadings(fragment, under)
  for (const link of links) linkSentence(fragment, link)
  return fragment
}

/** Each heading `under` levels lower (h6 at most), attributes and content kept. */
function demoteHeadings(root: DocumentFragment, under: number): void {
  for (const heading of root.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    const level = Math.min(6, Number(heading.tagName[1]) + under)
    const demoted = document.createElement(`h${level}`)
    for (const { name, value } of heading.attributes) demoted.setAttribute(name, value)
    demoted.append(...heading.childNodes)
    heading.replaceWith(demoted)
  }
}

function linkSentence(root: DocumentFragment, link: SentenceLink): void {
  if (!link.text.trim()) return
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT)
  for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) {
    if (node.parentElement?.closest('a')) continue
    const at = node.data.indexOf(link.text)
    if (at < 0) continue
    const sentence = node.splitText(at)
    sentence.splitText(link.text.length)
    const anchor = document.createElement('a')
    anchor.href = link.href
    anchor.className = 'annotated'
    anchor.title = link.title
    sentence.replaceWith(anchor)
    anchor.append(sentence)
    return
  }
}
