/**
 * The eval's tasks: multi-step work over three real MCP servers (server-filesystem on a seeded
 * directory, server-memory, server-everything). Each has two scripted models, one per mode:
 * `direct` calls the tools one model turn at a time (independent calls together in one turn, as
 * a model with parallel tool calls does; a call that needs an earlier result waits a turn), `code`
 * writes one program for run_code and answers from what it returned. The scripts read the real
 * tool results they get (file names, contents, temperatures), so what they send is what a model
 * would send after reading the same results. They are scripted model turns, not a model's:
 * `--live` records the same tasks with a real model (README).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ChatMessage, ModelRequest, ModelToolCall } from '../../plugins/models/api.ts'

/** Fixed, so the paths in tool results (and so the cassettes) are the same on every run. */
export const WORK = '/tmp/yoke-eval-code'
export const FILES = join(WORK, 'files')
export const MEMORY_FILE = join(WORK, 'memory.jsonl')

const SEED: Record<string, string> = {
  'alpha.txt': 'The alpha release shipped on Monday.\nIt fixed three crashes in the importer.\n',
  'beta.txt': 'Beta testers asked for dark mode.\nTwo of them also asked for keyboard shortcuts.\n',
  'gamma.txt':
    'Gamma is the codename of the next major version.\nIt drops the legacy plugin API.\n',
  'notes.md': '# Notes\nNot a text file for the tasks that read .txt files.\n',
}

/** The directory and the memory file as every task starts from them. */
export function seed(): void {
  // the files and the memory, not the directory the servers run in
  rmSync(FILES, { recursive: true, force: true })
  rmSync(MEMORY_FILE, { force: true })
  mkdirSync(FILES, { recursive: true })
  for (const [name, text] of Object.entries(SEED)) writeFileSync(join(FILES, name), text)
}

export type Step = { calls: ModelToolCall[] } | { text: string }
/** One mode's script: the next step from the conversation so far. */
export type Script = (messages: ChatMessage[], request: ModelRequest) => Step

export interface Task {
  name: string
  prompt: string
  direct: Script
  /** the program code mode runs, and the answer it gives from the program's result */
  program: string
  answer(result: string): string
}

const turnOf = (messages: ChatMessage[]) => messages.filter((m) => m.role === 'assistant').length
const toolTexts = (messages: ChatMessage[]) =>
  messages.filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool')
const lastTools = (messages: ChatMessage[]) => {
  const all = toolTexts(messages)
  const lastAssistant = messages.findLastIndex((m) => m.role === 'assistant')
  return all.filter((m) => messages.indexOf(m) > lastAssistant)
}
let ids = 0
const call = (name: string, args: Record<string, unknown>): ModelToolCall => ({
  id: `call_${++ids}`,
  name,
  args,
})
/** the `.txt` names of a list_directory answer ("[FILE] alpha.txt" lines) */
const txtFiles = (listing: string) =>
  [...listing.matchAll(/\[FILE\] (\S+\.txt)/g)].map((m) => join(FILES, m[1]!))
const words = (text: string) => text.split(/\s+/).filter(Boolean).length

/** The script of one mode: the steps in order, each from the conversation so far. */
const steps =
  (...each: Array<(messages: ChatMessage[]) => Step>): Script =>
  (messages) =>
    each[Math.min(turnOf(messages), each.length - 1)]!(messages)

export const TASKS: Task[] = [
  {
    name: 'files-to-memory',
    prompt: `Store every .txt file in ${FILES} in the memory graph as an entity of type "file" (named by its file name) with the file's first line as an observation, then tell me how many entities the graph holds.`,
    direct: steps(
      () => ({ calls: [call('mcp__fs__list_directory', { path: FILES })] }),
      (m) => ({
        calls: txtFiles(lastTools(m)[0]!.content).map((path) =>
          call('mcp__fs__read_text_file', { path }),
        ),
      }),
      (m) => ({
        calls: [
          call('mcp__memory__create_entities', {
            entities: lastTools(m).map((t, i) => ({
              name: txtFiles(toolTexts(m)[0]!.content)[i]!.split('/').pop(),
              entityType: 'file',
              observations: [t.content.split('\n')[0]],
            })),
          }),
        ],
      }),
      () => ({ calls: [call('mcp__memory__read_graph', {})] }),
      (m) => ({
        text: `The graph holds ${(JSON.parse(lastTools(m)[0]!.content).entities ?? []).length} entities.`,
      }),
    ),
    program: `const listing = await tools.fs.list_directory({ path: ${JSON.stringify(FILES)} })
const names = [...listing.content.matchAll(/\\[FILE\\] (\\S+\\.txt)/g)].map((m) => m[1])
const texts = await Promise.all(names.map((n) => tools.fs.read_text_file({ path: ${JSON.stringify(FILES)} + '/' + n })))
await tools.memory.create_entities({
  entities: names.map((name, i) => ({ name, entityType: 'file', observations: [texts[i].content.split('\\n')[0]] })),
})
const graph = await tools.memory.read_graph({})
return { stored: names, entities: graph.entities.length }`,
    answer: (r) => `The graph holds ${JSON.parse(r).entities} entities.`,
  },
  {
    name: 'word-count-report',
    prompt: `Count the words of each .txt file in ${FILES}, write the counts as a Markdown list to ${FILES}/report.md, and tell me the total.`,
    direct: steps(
      () => ({ calls: [call('mcp__fs__list_directory', { path: FILES })] }),
      (m) => ({
        calls: txtFiles(lastTools(m)[0]!.content).map((path) =>
          call('mcp__fs__read_text_file', { path }),
        ),
      }),
      (m) => {
        const names = txtFiles(toolTexts(m)[0]!.content).map((p) => p.split('/').pop())
        const counts = lastTools(m).map((t) => words(t.content))
        const content = names.map((n, i) => `- ${n}: ${counts[i]} words`).join('\n') + '\n'
        return { calls: [call('mcp__fs__write_file', { path: `${FILES}/report.md`, content })] }
      },
      (m) => {
        const counts = toolTexts(m)
          .slice(1, -1)
          .map((t) => words(t.content))
        return { text: `Wrote report.md; ${counts.reduce((a, b) => a + b, 0)} words in all.` }
      },
    ),
    program: `const listing = await tools.fs.list_directory({ path: ${JSON.stringify(FILES)} })
const names = [...listing.content.matchAll(/\\[FILE\\] (\\S+\\.txt)/g)].map((m) => m[1])
const counts = await Promise.all(names.map(async (n) => {
  const { content } = await tools.fs.read_text_file({ path: ${JSON.stringify(FILES)} + '/' + n })
  return content.split(/\\s+/).filter(Boolean).length
}))
const content = names.map((n, i) => '- ' + n + ': ' + counts[i] + ' words').join('\\n') + '\\n'
await tools.fs.write_file({ path: ${JSON.stringify(FILES)} + '/report.md', content })
return { total: counts.reduce((a, b) => a + b, 0) }`,
    answer: (r) => `Wrote report.md; ${JSON.parse(r).total} words in all.`,
  },
  {
    name: 'people-graph',
    prompt:
      'In memory, record Ada, Grace and Linus as people; Ada works with Grace and Grace mentors Linus. Then tell me whom Grace is connected to.',
    direct: steps(
      () => ({
        calls: [
          call('mcp__memory__create_entities', {
            entities: ['Ada', 'Grace', 'Linus'].map((name) => ({
              name,
              entityType: 'person',
              observations: [],
            })),
          }),
        ],
      }),
      () => ({
        calls: [
          call('mcp__memory__create_relations', {
            relations: [
              { from: 'Ada', to: 'Grace', relationType: 'works with' },
              { from: 'Grace', to: 'Linus', relationType: 'mentors' },
            ],
          }),
        ],
      }),
      () => ({ calls: [call('mcp__memory__search_nodes', { query: 'Grace' })] }),
      (m) => {
        const graph = JSON.parse(lastTools(m)[0]!.content)
        const linked = (graph.relations ?? []).map((r: { from: string; to: string }) =>
          r.from === 'Grace' ? r.to : r.from,
        )
        return { text: `Grace is connected to ${linked.join(' and ')}.` }
      },
    ),
    program: `await tools.memory.create_entities({ entities: ['Ada', 'Grace', 'Linus'].map((name) => ({ name, entityType: 'person', observations: [] })) })
await tools.memory.create_relations({ relations: [
  { from: 'Ada', to: 'Grace', relationType: 'works with' },
  { from: 'Grace', to: 'Linus', relationType: 'mentors' },
] })
const graph = await tools.memory.read_graph({})
return graph.relations.filter((r) => r.from === 'Grace' || r.to === 'Grace').map((r) => (r.from === 'Grace' ? r.to : r.from))`,
    answer: (r) => `Grace is connected to ${JSON.parse(r).join(' and ')}.`,
  },
  {
    name: 'running-sum',
    prompt: 'Add up 17, 25, 8, 42, 3 and 11 with the get-sum tool, one addition at a time.',
    direct: (messages) => {
      const numbers = [17, 25, 8, 42, 3, 11]
      const turn = turnOf(messages)
      const last = lastTools(messages)[0]?.content
      const sum = last ? Number(/is (-?\d+(?:\.\d+)?)\.?\s*$/.exec(last)?.[1]) : numbers[0]!
      if (turn >= numbers.length - 1) return { text: `The sum is ${sum}.` }
      return { calls: [call('mcp__everything__get-sum', { a: sum, b: numbers[turn + 1] })] }
    },
    program: `let sum = 17
for (const n of [25, 8, 42, 3, 11]) {
  const text = await tools.everything['get-sum']({ a: sum, b: n })
  sum = Number(/is (-?\\d+(?:\\.\\d+)?)\\.?\\s*$/.exec(text)[1])
}
return sum`,
    answer: (r) => `The sum is ${r}.`,
  },
  {
    name: 'warmest-city',
    prompt: `Get the weather for New York, Chicago and Los Angeles, find the warmest city, echo its name, and save one line about it to ${FILES}/warmest.txt.`,
    direct: steps(
      () => ({
        calls: ['New York', 'Chicago', 'Los Angeles'].map((location) =>
          call('mcp__everything__get-structured-content', { location }),
        ),
      }),
      (m) => {
        const temps = lastTools(m).map((t) => JSON.parse(t.content).temperature as number)
        const cities = ['New York', 'Chicago', 'Los Angeles']
        const i = temps.indexOf(Math.max(...temps))
        return {
          calls: [
            call('mcp__everything__echo', { message: cities[i]! }),
            call('mcp__fs__write_file', {
              path: `${FILES}/warmest.txt`,
              content: `${cities[i]} is the warmest at ${temps[i]} °C.\n`,
            }),
          ],
        }
      },
      (m) => ({ text: `${lastTools(m)[0]!.content.replace('Echo: ', '')} is the warmest.` }),
    ),
    program: `const cities = ['New York', 'Chicago', 'Los Angeles']
const weather = await Promise.all(cities.map((location) => tools.everything['get-structured-content']({ location })))
const i = weather.reduce((best, w, j) => (w.temperature > weather[best].temperature ? j : best), 0)
await tools.everything.echo({ message: cities[i] })
await tools.fs.write_file({ path: ${JSON.stringify(FILES)} + '/warmest.txt', content: cities[i] + ' is the warmest at ' + weather[i].temperature + ' °C.\\n' })
return { city: cities[i], temperature: weather[i].temperature }`,
    answer: (r) => `${JSON.parse(r).city} is the warmest.`,
  },
]

/** Code mode's script: the program, then the answer from what it returned. */
export function codeScript(task: Task): Script {
  return (messages) => {
    if (turnOf(messages) === 0) return { calls: [call('run_code', { code: task.program })] }
    const result = lastTools(messages)[0]!.content
    // the first paragraph is what the program returned; a failure says why
    return result.startsWith('Error')
      ? { text: `It failed: ${result.split('\n')[0]}` }
      : { text: task.answer(result.split('\n\ntool calls')[0]!) }
  }
}

/** Tool call ids restart per run, so a recording and its replay send the same ids. */
export function resetIds(): void {
  ids = 0
}
