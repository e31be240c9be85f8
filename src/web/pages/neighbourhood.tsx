// A concept's neighbourhood: the concepts that share facts with it, drawn by Cytoscape.js (a
// canvas; nodes are clickable), with the same concepts as a list of links for the keyboard and
// for screen readers.
import cytoscape from 'cytoscape'
import { useEffect, useRef } from 'preact/hooks'
import type { ConceptDetail, FactDetail } from '../types.ts'
import { Link, navigate } from '../ui.tsx'

/**
 * Cytoscape.js adds an inline <style> for its containers unless an element with this id exists:
 * the page's CSP refuses inline styles, so app.css has the rule and this marker stands in.
 */
const CYTOSCAPE_STYLESHEET = '__________cytoscape_stylesheet'

/** Neighbours drawn at most, the most shared facts first. */
const MAX_NEIGHBOURS = 30

interface Neighbour {
  id: string
  name: string
  shared: number
}

function neighbours(concept: ConceptDetail, facts: FactDetail[]): Neighbour[] {
  const byId = new Map<string, Neighbour>()
  for (const fact of facts)
    for (const other of fact.concepts) {
      if (other.id === concept.id) continue
      const entry = byId.get(other.id) ?? { id: other.id, name: other.canonical_name, shared: 0 }
      entry.shared++
      byId.set(other.id, entry)
    }
  return [...byId.values()].sort((a, b) => b.shared - a.shared || a.name.localeCompare(b.name)).slice(0, MAX_NEIGHBOURS)
}

export function Neighbourhood({ concept, facts, href }: { concept: ConceptDetail; facts: FactDetail[]; href: (id: string) => string }) {
  const container = useRef<HTMLDivElement>(null)
  const around = neighbours(concept, facts)
  useEffect(() => {
    if (!container.current || around.length === 0) return
    if (!document.getElementById(CYTOSCAPE_STYLESHEET)) document.head.append(Object.assign(document.createElement('meta'), { id: CYTOSCAPE_STYLESHEET }))
    const graph = cytoscape({
      container: container.current,
      elements: [
        { data: { id: concept.id, label: concept.canonical_name, centre: 1 } },
        ...around.flatMap((n) => [{ data: { id: n.id, label: n.name, centre: 0 } }, { data: { id: `${concept.id}-${n.id}`, source: concept.id, target: n.id, weight: n.shared } }]),
      ],
      style: [
        {
          selector: 'node',
          style: {
            label: 'data(label)',
            'font-size': 11,
            'background-color': '#5b7db1',
            color: '#1d2733',
            'text-valign': 'bottom',
            'text-margin-y': 4,
            'text-wrap': 'wrap',
            'text-max-width': '110px',
          },
        },
        { selector: 'node[centre = 1]', style: { 'background-color': '#c2562f', width: 34, height: 34, 'font-weight': 'bold' } },
        { selector: 'edge', style: { width: 'mapData(weight, 1, 10, 1, 6)', 'line-color': '#b8c4d2' } },
      ],
      layout: { name: 'concentric', concentric: (node) => node.data('centre'), levelWidth: () => 1, minNodeSpacing: 70 },
      userZoomingEnabled: false,
      boxSelectionEnabled: false,
    })
    graph.on('tap', 'node', (event) => {
      const id = event.target.id() as string
      if (id !== concept.id) navigate(href(id))
    })
    return () => graph.destroy()
  }, [concept.id, around.map((n) => n.id).join()])
  if (around.length === 0) return <p>No concept shares a fact with this one among its summarized facts.</p>
  return (
    <figure class="neighbourhood">
      <div ref={container} class="graph" role="img" aria-label={`${concept.canonical_name} and ${around.length} concepts that share facts with it`} />
      <figcaption>
        <ul class="chips">
          {around.map((n) => (
            <li key={n.id}>
              <Link href={href(n.id)}>{n.name}</Link> <span class="meta">({n.shared} shared)</span>
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  )
}
