export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

export function row(cells: Array<string | number>): string {
  return cells.map((c, i) => (typeof c === 'number' ? c.toFixed(c < 10 ? 2 : 1) : c).padStart(i === 0 ? 0 : 13).padEnd(i === 0 ? 18 : 0)).join('')
}
