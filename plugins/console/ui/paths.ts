/**
 * Where the built web console lives: `dist/console/` at the package root (build output, shipped in
 * the package's `files`). The console server serves static files from UI_DIR only.
 *
 * Run from source (tsx, this file is `plugins/console/ui/paths.ts`) or from the build
 * (`dist/plugins/console/ui/paths.js`), both resolve to the same folder.
 */
import { fileURLToPath } from 'node:url'

/** The folder, relative to the package root, that `npm run build` writes the console into. */
export const UI_OUT = 'dist/console'

/** The absolute path of the built console: index.html, app.js, style.css. */
export const UI_DIR = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts') ? '../../../dist/console/' : '../../../console/',
    import.meta.url,
  ),
)

/** The files a build writes into UI_DIR: the page, its script, its one stylesheet. */
export const UI_FILES = ['index.html', 'app.js', 'style.css'] as const
