/**
 * The page's files, served from the built UI folder only: a path is decoded once, must stay
 * inside the folder (`..`, an encoded `%2e%2e`, a NUL or a backslash are refused before the disk is
 * read), and must be a regular file there whose real path is inside the folder too (a symlink that
 * leads out is refused).
 */
import { readFile, realpath, stat } from 'node:fs/promises'
import { extname, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The built page: `dist/console/` at the package root, from source and from the build alike. */
export const DEFAULT_UI_DIR = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts') ? '../../dist/console/' : '../../console/',
    import.meta.url,
  ),
)

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
}

export type StaticAnswer =
  { status: 200; type: string; body: Buffer } | { status: 400 | 404; message: string }

/** The file `pathname` names inside `dir` (`/` is index.html). */
export async function staticFile(dir: string, pathname: string): Promise<StaticAnswer> {
  let path: string
  try {
    path = decodeURIComponent(pathname)
  } catch {
    return { status: 400, message: 'the path is not valid percent-encoding' }
  }
  if (path.includes('\0') || path.includes('\\') || path.split('/').includes('..'))
    return { status: 400, message: "the path leaves the console's folder" }
  if (path.endsWith('/')) path += 'index.html'
  const root = resolve(dir)
  const file = resolve(join(root, path))
  if (!file.startsWith(root + sep))
    return { status: 400, message: "the path leaves the console's folder" }
  try {
    const [real, realRoot] = await Promise.all([realpath(file), realpath(root)])
    if (!real.startsWith(realRoot + sep) || !(await stat(real)).isFile())
      return { status: 404, message: `no file ${pathname}` }
    return {
      status: 200,
      type: TYPES[extname(real)] ?? 'application/octet-stream',
      body: await readFile(real),
    }
  } catch {
    return {
      status: 404,
      message:
        path === '/index.html'
          ? `the console's page is not built (${root} has no index.html): run \`npm run build\` in yoke`
          : `no file ${pathname}`,
    }
  }
}
