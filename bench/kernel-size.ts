/**
 * Kernel size, per area, now and as a trend over git history
 * (`node --import tsx bench/kernel-size.ts [--samples N]`). Lines of code: not blank, not only a
 * comment, as test/kernel-budget.test.ts counts them (it imports `codeLines` and `AREAS` from
 * here), so a budget raised in that test shows here as a step in the trend. Past commits are read
 * with `git show` (their text as it was committed: the formatter's check is the test's, for now).
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..')

/**
 * The areas of src/: `counted` ones are the kernel and have a budget; the others are reported
 * (src/cli is the command frame, src/lib libraries the kernel uses, the top level the public entry
 * points and the error catalogue).
 */
export const AREAS = [
  { area: 'src/kernel', counted: true },
  { area: 'src/config', counted: true },
  { area: 'src/runtime', counted: true },
  { area: 'src/lib', counted: false },
  { area: 'src/cli', counted: false },
  { area: 'src (top)', counted: false },
] as const

export type Area = (typeof AREAS)[number]['area']

const SOURCE = /\.(ts|mjs)$/

/** The area a repository path belongs to, or undefined (not source, or a test). */
export function areaOf(path: string): Area | undefined {
  if (!path.startsWith('src/') || !SOURCE.test(path) || path.endsWith('.test.ts')) return undefined
  const [, dir, rest] = path.split('/')
  if (rest === undefined) return 'src (top)'
  return AREAS.find((a) => a.area === `src/${dir}`)?.area ?? 'src (top)'
}

/** Lines that hold code: not blank, not only a comment. */
export function codeLines(text: string): number {
  let inBlock = false
  return text.split('\n').filter((raw) => {
    const line = raw.trim()
    if (inBlock) {
      if (line.includes('*/')) inBlock = false
      return false
    }
    if (line.startsWith('/*')) {
      inBlock = !line.includes('*/')
      return false
    }
    return line !== '' && !line.startsWith('//')
  }).length
}

/** The source files of src/ in the working tree, repository-relative. */
export function sourceFiles(): string[] {
  return readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .map((f) =>
      relative(ROOT, join(ROOT, 'src', f))
        .split('\\')
        .join('/'),
    )
    .filter((f) => areaOf(f) !== undefined)
}

export type Sizes = Record<Area, number>

/** Lines of code per area over `files`, each read by `read`. */
export function sizesOf(files: string[], read: (file: string) => string): Sizes {
  const sizes = Object.fromEntries(AREAS.map((a) => [a.area, 0])) as Sizes
  for (const file of files) {
    const area = areaOf(file)
    if (area) sizes[area] += codeLines(read(file))
  }
  return sizes
}

const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })

/** The sizes at a commit, from git's objects (not the working tree). */
function sizesAt(commit: string): Sizes {
  const files = git('ls-tree', '-r', '--name-only', commit, '--', 'src').split('\n')
  return sizesOf(
    files.filter((f) => areaOf(f)),
    (f) => git('show', `${commit}:${f}`),
  )
}

/** About `samples` commits that touched src/, oldest first, evenly spaced, the newest included. */
function sampleCommits(samples: number): Array<{ commit: string; date: string; subject: string }> {
  const log = git('log', '--format=%h\t%ad\t%s', '--date=short', '--', 'src')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [commit = '', date = '', subject = ''] = line.split('\t')
      return { commit, date, subject }
    })
  const step = Math.max(1, Math.ceil(log.length / samples))
  return log.filter((_, i) => i % step === 0).reverse()
}

const kernelOf = (sizes: Sizes) =>
  AREAS.filter((a) => a.counted).reduce((sum, a) => sum + sizes[a.area], 0)

function row(label: string, sizes: Sizes, note = ''): string {
  const cells = AREAS.map((a) => String(sizes[a.area]).padStart(a.area.length))
  return [label.padEnd(20), String(kernelOf(sizes)).padStart(6), ...cells, note].join('  ')
}

function main() {
  const at = process.argv.indexOf('--samples')
  const samples = at > 0 ? Number(process.argv[at + 1]) || 8 : 8
  const header = ['', 'kernel', ...AREAS.map((a) => a.area)]
  console.log(
    [header[0]!.padEnd(20), header[1]!.padStart(6), ...header.slice(2)].join('  '),
    '   (lines of code; kernel = src/kernel + src/config + src/runtime)',
  )
  for (const { commit, date, subject } of sampleCommits(samples))
    console.log(row(`${commit} ${date}`, sizesAt(commit), subject.slice(0, 60)))
  console.log(
    row(
      'working tree',
      sizesOf(sourceFiles(), (f) => readFileSync(join(ROOT, f), 'utf8')),
    ),
  )
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main()
