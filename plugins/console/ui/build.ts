/**
 * Builds the web console into UI_DIR (`dist/console/`): esbuild bundles `app/main.ts` (preact,
 * typed) into one minified `app.js`, minifies `style.css`, and copies `index.html`, which loads
 * the two from its own origin (the server's Content-Security-Policy allows nothing else; the
 * cookie set when the page is opened with `?token=` carries the token for them). Offline:
 * everything comes from node_modules and this folder. `npm run build` runs it after tsc:
 * `node --import tsx plugins/console/ui/build.ts`.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { UI_DIR, UI_FILES } from './paths.ts'

const HERE = fileURLToPath(new URL('.', import.meta.url))

/** Builds the console into `outDir` (default UI_DIR); returns the files written. */
export async function buildConsole(outDir = UI_DIR): Promise<string[]> {
  const { build, transform } = await import('esbuild')
  mkdirSync(outDir, { recursive: true })
  await build({
    entryPoints: [join(HERE, 'app', 'main.ts')],
    outfile: join(outDir, 'app.js'),
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    legalComments: 'none',
    charset: 'utf8',
    logLevel: 'warning',
  })
  const css = readFileSync(join(HERE, 'style.css'), 'utf8')
  const style = await transform(css, { loader: 'css', minify: true })
  writeFileSync(join(outDir, 'style.css'), style.code)
  copyFileSync(join(HERE, 'index.html'), join(outDir, 'index.html'))
  return UI_FILES.map((f) => join(outDir, f))
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildConsole()
}
