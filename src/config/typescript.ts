/**
 * @module config/typescript
 * tsx, for the project's TypeScript: registered when the first project module is imported, so a
 * command whose config has only built-in plugins never pays for it. (Running from yoke's own
 * source, tsx is loaded already.) Registered before yoke's own loader hooks, which therefore see
 * every import first, as they did when tsx was loaded at start.
 */
import { FROM_SOURCE } from '../roots.ts'

let registered: Promise<void> | undefined

export function loadTypeScript(): Promise<void> {
  if (FROM_SOURCE) return Promise.resolve()
  return (registered ??= (async () => {
    const [esm, cjs] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')])
    esm.register()
    cjs.register() // a .ts plugin outside a "type": "module" package is loaded as CommonJS
  })())
}
