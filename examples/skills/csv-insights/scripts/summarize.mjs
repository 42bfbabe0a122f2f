#!/usr/bin/env node
// Summarizes a CSV file column by column. Streams the file; handles quoted fields and "" escapes.
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'

const file = process.argv[2]
if (!file) {
  console.error('usage: node summarize.mjs FILE.csv')
  process.exit(2)
}

function splitRow(line) {
  const cells = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"'
        i++
      } else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') {
      cells.push(cell)
      cell = ''
    } else cell += c
  }
  cells.push(cell)
  return cells
}

const kind = (v) =>
  /^-?\d+$/.test(v)
    ? 'integer'
    : /^-?\d*\.\d+(e-?\d+)?$/i.test(v)
      ? 'number'
      : /^(true|false)$/i.test(v)
        ? 'boolean'
        : !Number.isNaN(Date.parse(v)) && /\d{4}-\d{2}-\d{2}/.test(v)
          ? 'date'
          : 'text'

let header
const columns = []
let rows = 0
for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
  if (!line.trim()) continue
  const cells = splitRow(line)
  if (!header) {
    header = cells
    for (const name of header)
      columns.push({
        name,
        kinds: new Map(),
        empty: 0,
        min: Infinity,
        max: -Infinity,
        sum: 0,
        count: 0,
        distinct: new Set(),
      })
    continue
  }
  rows++
  columns.forEach((col, i) => {
    const v = (cells[i] ?? '').trim()
    if (!v) return void col.empty++
    const k = kind(v)
    col.kinds.set(k, (col.kinds.get(k) ?? 0) + 1)
    if (k === 'integer' || k === 'number') {
      const n = Number(v)
      col.min = Math.min(col.min, n)
      col.max = Math.max(col.max, n)
      col.sum += n
      col.count++
    } else if (col.distinct.size < 1000) col.distinct.add(v)
  })
}

console.log(`${rows} rows, ${columns.length} columns`)
for (const col of columns) {
  const kinds = [...col.kinds.entries()].sort((a, b) => b[1] - a[1])
  const type =
    kinds.length === 0
      ? 'empty'
      : kinds.length === 1
        ? kinds[0][0]
        : `mixed (${kinds.map(([k, n]) => `${k} ${n}`).join(', ')})`
  const stats = col.count
    ? `min ${col.min}, max ${col.max}, mean ${(col.sum / col.count).toFixed(3)}`
    : `${col.distinct.size}${col.distinct.size >= 1000 ? '+' : ''} distinct`
  console.log(`- ${col.name}: ${type}; ${col.empty} empty; ${stats}`)
}
