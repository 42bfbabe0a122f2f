// Skill search finds a skill its query names, whether or not the catalog shows it. The collection
// has the shape of a real public one (K-Dense-AI/claude-scientific-skills: 134 skill folders named
// after Python libraries, a LICENSE and a README at the top), and the catalog's budget leaves most
// of it out. "make a chart in matplotlib" names `matplotlib` though its description says neither
// "make" nor "chart": a plain BM25 covers one word of three and answered "no skill matches".
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { ToolResult } from '../../../src/index.ts'
import { suiteProjects, type Project } from '../../helpers/project.ts'
import { skillsKernel } from '../../helpers/skills.ts'

/** The folder names of K-Dense-AI/claude-scientific-skills (its scientific-skills/), as fetched. */
const NAMES =
  `adaptyv aeon anndata arboreto astropy benchling-integration bgpt-paper-search biopython
bioservices cellxgene-census cirq citation-management clinical-decision-support clinical-reports
cobrapy consciousness-council dask database-lookup datamol deepchem deeptools depmap dhdna-profiler
diffdock dnanexus-integration docx esm etetoolkit exploratory-data-analysis flowio fluidsim
generate-image geniml geomaster geopandas get-available-resources gget ginkgo-cloud-lab
glycoengineering gtars histolab hypogenic hypothesis-generation imaging-data-commons infographics
iso-13485-certification labarchive-integration lamindb latchbio-integration latex-posters
literature-review markdown-mermaid-writing market-research-reports markitdown matchms matlab
matplotlib medchem modal molecular-dynamics molfeat networkx neurokit2 neuropixels-analysis
omero-integration open-notebook opentrons-integration optimize-for-gpu paper-lookup parallel-web
pathml pdf peer-review pennylane perplexity-search phylogenetics polars polars-bio pptx pptx-posters
primekg protocolsio-integration pufferlib pydeseq2 pydicom pyhealth pylabrobot pymatgen pymc pymoo
pyopenms pysam pytdc pytorch-lightning pyzotero qiskit qutip rdkit research-grants research-lookup
rowan scanpy scholar-evaluation scientific-brainstorming scientific-critical-thinking
scientific-schematics scientific-slides scientific-visualization scientific-writing scikit-bio
scikit-learn scikit-survival scvelo scvi-tools seaborn shap simpy stable-baselines3
statistical-analysis statsmodels sympy tiledbvcf timesfm-forecasting torch-geometric torchdrug
transformers treatment-plans umap-learn usfiscaldata vaex venue-templates what-if-oracle xlsx
zarr-python`.split(/\s+/)

/** Descriptions as such collections write them: what the library does, not the words a user asks with. */
const DESCRIPTIONS: Record<string, string> = {
  matplotlib:
    'Low-level plotting library for full customization. Use when you need fine-grained control over every plot element, publication figures or custom visualizations.',
  seaborn:
    'Statistical visualization with pandas integration. Use for quick exploration of distributions, relationships and categorical comparisons.',
  'umap-learn':
    'Dimensionality reduction for embeddings and manifold structure. Use for nonlinear projections of high-dimensional data.',
}
const description = (name: string) =>
  DESCRIPTIONS[name] ??
  `Toolkit for ${name.replace(/-/g, ' ')} workflows in research pipelines. Use when a task involves ${name.replace(/-/g, ' ')}.`

const text = (r: ToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
const listed = (r: ToolResult) =>
  ((r.structured as { skills: Array<{ name: string }> }).skills ?? []).map((s) => s.name)

function collection(p: Project, dir = 'skills') {
  p.write(`${dir}/LICENSE.md`, 'MIT License\n')
  p.write(`${dir}/README.md`, '# Scientific skills\n')
  for (const name of NAMES)
    p.write(
      `${dir}/${name}/SKILL.md`,
      `---\nname: ${name}\ndescription: ${JSON.stringify(description(name))}\nlicense: MIT\n---\n# ${name}\n`,
    )
}

describe('skills: a query that names a skill finds it', () => {
  const project = suiteProjects()
  let h: Awaited<ReturnType<typeof skillsKernel>>
  before(async () => {
    const p = project()
    collection(p)
    h = await skillsKernel(p, { catalogChars: 3000 })
    assert.equal(h.skills.list().length, NAMES.length)
  })
  after(async () => h?.kernel.dispose())

  const search = async (query: string) => {
    const r = await h.rt.call('skills_list', { query })
    assert.equal(r.status, 'ok', text(r))
    return r
  }

  it('"make a chart in matplotlib" lists matplotlib first', async () => {
    const r = await search('make a chart in matplotlib')
    assert.doesNotMatch(text(r), /no skill matches/)
    assert.equal(listed(r)[0], 'matplotlib', text(r))
  })

  it('a word of a name counts: "draw quick figures with umap" finds umap-learn', async () => {
    const r = await search('draw quick figures with umap')
    assert.ok(listed(r).includes('umap-learn'), text(r))
  })

  it('two skills named in one sentence both come first, in the order of the ranking', async () => {
    const r = await search('redo this seaborn chart in matplotlib')
    assert.deepEqual(listed(r).slice(0, 2).sort(), ['matplotlib', 'seaborn'], text(r))
  })

  it('a query that names nothing is still "no skill matches"', async () => {
    const r = await search('bake sourdough bread at home')
    assert.match(text(r), /no skill matches "bake sourdough bread at home"/)
    assert.deepEqual(listed(r), [])
  })

  it('the catalog leaves most skills out, and lists the one the task names', () => {
    const plain = h.prompt.render()
    const omitted = Number(/<omitted count="(\d+)">/.exec(plain)?.[1])
    assert.ok(omitted > NAMES.length / 2, `${omitted} of ${NAMES.length} omitted`)
    assert.doesNotMatch(plain, /<name>matplotlib<\/name>/, 'by name alone it is left out')
    const forTask = (h.prompt as unknown as { render(c: { task: string }): string }).render({
      task: 'make a chart in matplotlib',
    })
    assert.match(forTask, /<name>matplotlib<\/name>/)
  })
})

describe('skills: a namespaced skill is named by its own name', () => {
  const project = suiteProjects()
  it('"make a chart in matplotlib" finds sci:matplotlib, and the namespace alone names no skill', async () => {
    const p = project()
    collection(p, 'sci')
    const h = await skillsKernel(p, { dirs: [] })
    try {
      h.skills.addRoot(p.path('sci'), { namespace: 'sci' })
      const r = await h.rt.call('skills_list', { query: 'make a chart in matplotlib' })
      assert.equal(listed(r)[0], 'sci:matplotlib', text(r))
      const ns = await h.rt.call('skills_list', { query: 'bake sci bread' })
      assert.match(text(ns), /no skill matches/)
    } finally {
      await h.kernel.dispose()
    }
  })
})
