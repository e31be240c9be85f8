// A concept's neighbourhood as the API answers it (GET …/concepts/{id}/neighbourhood: the first
// of its related concepts, with the same counts as the related list, and the facts each pair of
// them shares), drawn in SVG, with the same concepts as a list of links for the keyboard and for
// screen readers. Hand-drawn rather than by a graph library: at most NEIGHBOURHOOD_SIZE nodes
// around one centre need no force layout, and a library (Cytoscape.js was most of the app's
// JavaScript) would load on every page or need a second bundle.
import type { ConceptDetail, Neighbourhood as Answer } from '../../types.ts'
import { Link, navigate } from '../../ui.tsx'

const WIDTH = 640
const HEIGHT = 360
/** The ellipse the neighbours sit on, inside the picture with room for their labels. */
const RX = 250
const RY = 130
/** A label's characters at most (the list below has the full names). */
const LABEL = 22

const label = (name: string) => (name.length > LABEL ? `${name.slice(0, LABEL - 1)}…` : name)

export function Neighbourhood({
  concept,
  around,
  href,
}: {
  concept: ConceptDetail
  around: Answer
  href: (id: string) => string
}) {
  const { concepts, edges, total } = around
  if (concepts.length === 0) return <p>No concept shares a fact with this one.</p>
  // A circle: every neighbour at the same distance from the centre, the most shared first from the top, clockwise.
  const at = new Map(
    concepts.map((c, i) => [
      c.id,
      {
        x: WIDTH / 2 + RX * Math.sin((2 * Math.PI * i) / concepts.length),
        y: HEIGHT / 2 - RY * Math.cos((2 * Math.PI * i) / concepts.length),
      },
    ]),
  )
  const most = Math.max(...concepts.map((c) => c.shared_facts), ...edges.map((e) => e.shared_facts))
  const width = (shared: number) => 1 + (5 * shared) / most
  const centre = { x: WIDTH / 2, y: HEIGHT / 2 }
  return (
    <figure class="neighbourhood">
      <svg
        class="graph"
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-label={`${concept.canonical_name} and ${concepts.length} concepts that share facts with it`}
      >
        {edges.map((edge) => {
          const [a, b] = [at.get(edge.source), at.get(edge.target)]
          return (
            a &&
            b && (
              <line
                key={`${edge.source} ${edge.target}`}
                class="between"
                x1={a.x}
                y1={a.y}
                x2={b.x}
                y2={b.y}
                stroke-width={width(edge.shared_facts)}
              />
            )
          )
        })}
        {concepts.map((c) => {
          const p = at.get(c.id)!
          return <line key={c.id} x1={centre.x} y1={centre.y} x2={p.x} y2={p.y} stroke-width={width(c.shared_facts)} />
        })}
        {concepts.map((c) => {
          const p = at.get(c.id)!
          return (
            // biome-ignore lint/a11y/noStaticElementInteractions: a pointer's shortcut; the keyboard and screen readers have the same links in the list below.
            <g key={c.id} class="node" onClick={() => navigate(href(c.id))}>
              <circle cx={p.x} cy={p.y} r={9} />
              <text x={p.x} y={p.y + 22}>
                {label(c.canonical_name)}
              </text>
            </g>
          )
        })}
        <g class="node centre">
          <circle cx={centre.x} cy={centre.y} r={16} />
          <text x={centre.x} y={centre.y + 30}>
            {label(concept.canonical_name)}
          </text>
        </g>
      </svg>
      <figcaption>
        <ul class="chips">
          {concepts.map((c) => (
            <li key={c.id}>
              <Link href={href(c.id)}>{c.canonical_name}</Link> <span class="meta">({c.shared_facts} shared)</span>
            </li>
          ))}
        </ul>
        {total > concepts.length && (
          <p class="meta">
            The {concepts.length} of {total} related concepts that share the most facts with it.
          </p>
        )}
      </figcaption>
    </figure>
  )
}
