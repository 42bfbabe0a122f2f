// tsx is loaded only for TypeScript (src/config/modules.ts): a JavaScript plugin goes without it,
// and one whose import reaches TypeScript (a .ts file, or a path without its extension that only
// tsx resolves) is imported again with tsx under a new generation. Through the built CLI, where
// nothing preloads tsx.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runYoke, tempProject } from '../helpers/project.ts'

const PLUGIN = (from: string) => `import { describe } from '${from}'
export default {
  name: 'greeting',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'greet', description: describe('greets'), execute: () => 'hi' })
  },
}
`
const HELPER = `export const describe = (what: string): string => \`a tool that \${what}\`\n`
const CONFIG = `preset: minimal\nplugins:\n  greeting:\n    use: ./plugin.mjs\n`

describe('a JavaScript plugin that imports TypeScript', () => {
  for (const [kind, from] of [
    ['a .ts file', './helper.ts'],
    ['a path without its extension', './helper'],
  ] as const)
    it(`loads when it imports ${kind}`, async () => {
      const project = tempProject({
        'yoke.config.yaml': CONFIG,
        'plugin.mjs': PLUGIN(from),
        'helper.ts': HELPER,
      })
      try {
        const trusted = await runYoke(['trust'], { cwd: project.dir, home: project.home })
        assert.equal(trusted.code, 0, trusted.stderr)
        const listed = await runYoke(['tools', 'list', '--json'], {
          cwd: project.dir,
          home: project.home,
        })
        assert.equal(listed.code, 0, listed.stderr)
        const tools = JSON.parse(listed.stdout).tools as Array<{
          name: string
          description: string
        }>
        const greet = tools.find((t) => t.name === 'greet')
        assert.equal(greet?.description, 'a tool that greets', listed.stdout)
      } finally {
        project.cleanup()
      }
    })
})
