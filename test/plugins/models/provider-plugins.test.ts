// The openai and anthropic plugins: their config, the `model` service they provide, and the
// pending state (with the variable's name) while the API key is not set, in a kernel and in
// `yoke inspect`.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import anthropic from '../../../plugins/anthropic/index.ts'
import openai from '../../../plugins/openai/index.ts'
import type { ModelClient } from '../../../plugins/models/api.ts'
import { Kernel, toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'
import { runYoke, tempProject } from '../../helpers/project.ts'

const plugins = [
  {
    plugin: toPlugin(openai) as Plugin,
    keyEnv: 'OPENAI_API_KEY',
    base: (s: ModelServer) => s.openaiBaseUrl,
  },
  {
    plugin: toPlugin(anthropic) as Plugin,
    keyEnv: 'ANTHROPIC_API_KEY',
    base: (s: ModelServer) => s.anthropicBaseUrl,
  },
]

const checked = (plugin: Plugin, config: unknown) => {
  const result = validateConfig(plugin, config)
  assert.ok('value' in result, JSON.stringify(result))
  return result.value as Record<string, unknown>
}

describe('model provider plugins', () => {
  let server: ModelServer
  before(async () => {
    server = await modelServer(() => ({ text: 'from the plugin' }))
  })
  after(() => server.close())

  for (const { plugin, keyEnv, base } of plugins) {
    describe(plugin.name, () => {
      it('declares that it provides model; its config has defaults and refuses unknown keys', () => {
        assert.deepEqual(plugin.provides, ['model'])
        const config = checked(plugin, { model: 'm' })
        assert.equal(config.apiKeyEnv, keyEnv)
        assert.equal(config.timeoutMs, 60_000)
        assert.equal(config.maxRetries, 3)
        assert.equal(config.stream, true)
        assert.ok('issues' in validateConfig(plugin, {}), 'model is required')
        assert.ok(
          'issues' in validateConfig(plugin, { model: 'm', apiKey: 'sk-in-config' }),
          'keys do not go in config',
        )
        assert.ok('issues' in validateConfig(plugin, { model: 'm', baseUrl: 'not a url' }))
        assert.ok('issues' in validateConfig(plugin, { model: 'm', apiKeyEnv: 'NOT-A-NAME' }))
        assert.ok('issues' in validateConfig(plugin, { model: 'm', pricing: { inputPerMTok: 1 } }))
      })

      it('provides a working model with the key from the variable apiKeyEnv names', async () => {
        const kernel = new Kernel()
        const variable = `YOKE_TEST_${plugin.name.toUpperCase()}_KEY`
        process.env[variable] = 'sk-from-env-1234'
        try {
          const fiber = kernel.spawn(
            plugin,
            checked(plugin, { model: 'served', apiKeyEnv: variable, baseUrl: base(server) }),
            { key: 'llm' },
          )
          await kernel.whenSettled(fiber, 5000)
          assert.equal(fiber.state, 'active', fiber.error?.message)
          const model = kernel.services.get('model')!.value as ModelClient
          assert.equal(model.provider, plugin.name)
          assert.equal(model.model, 'served')
          const answer = await model.complete({
            system: '',
            messages: [{ role: 'user', content: 'hi' }],
            tools: [],
          })
          assert.equal(answer.text, 'from the plugin')
          const auth = server.requests.at(-1)!.headers
          assert.ok(
            auth.authorization === 'Bearer sk-from-env-1234' ||
              auth['x-api-key'] === 'sk-from-env-1234',
          )
        } finally {
          delete process.env[variable]
          await kernel.dispose()
        }
      })

      it('apiKeyEnv: none runs without a key (local servers)', async () => {
        const kernel = new Kernel()
        try {
          const fiber = kernel.spawn(
            plugin,
            checked(plugin, { model: 'local', apiKeyEnv: 'none', baseUrl: base(server) }),
            { key: 'local' },
          )
          await kernel.whenSettled(fiber, 5000)
          assert.equal(fiber.state, 'active', fiber.error?.message)
          await (kernel.services.get('model')!.value as ModelClient).complete({
            system: '',
            messages: [{ role: 'user', content: 'hi' }],
            tools: [],
          })
          assert.equal(server.requests.at(-1)!.headers.authorization, undefined)
        } finally {
          await kernel.dispose()
        }
      })

      it('stays pending, naming the variable, while the key is not set', async () => {
        const kernel = new Kernel()
        try {
          const fiber = kernel.spawn(
            plugin,
            checked(plugin, { model: 'm', apiKeyEnv: 'YOKE_TEST_NEVER_SET_KEY' }),
            { key: 'llm' },
          )
          await kernel.whenSettled(fiber, 5000)
          assert.equal(fiber.state, 'pending')
          assert.equal(fiber.error?.code, 'PLUGIN_WAITING')
          assert.equal(
            fiber.error?.message,
            'instance "llm" is waiting: the API key variable YOKE_TEST_NEVER_SET_KEY is not set',
          )
          assert.match(fiber.error!.hint, /export YOKE_TEST_NEVER_SET_KEY=/)
          assert.equal(kernel.services.get('model'), undefined)
        } finally {
          await kernel.dispose()
        }
      })
    })
  }

  it('yoke inspect shows both instances pending on their key variables', async () => {
    const project = tempProject({
      'yoke.config.yaml': [
        'plugins:',
        '  gpt:',
        '    use: openai',
        '    config: { model: gpt-4o-mini }',
        '  claude:',
        '    use: anthropic',
        '    config: { model: claude-sonnet-4-5, apiKeyEnv: YOKE_TEST_UNSET_ANTHROPIC_KEY }',
        '',
      ].join('\n'),
    })
    try {
      // an empty variable counts as unset, so the developer's own OPENAI_API_KEY does not leak in
      const run = await runYoke(['inspect', '--json', '--fresh'], {
        cwd: project.dir,
        home: project.home,
        env: { OPENAI_API_KEY: '' },
        timeoutMs: 20_000,
      })
      assert.equal(run.code, 0, run.stderr)
      const byKey = Object.fromEntries(JSON.parse(run.stdout).instances.map((i: any) => [i.key, i]))
      assert.equal(byKey.gpt.state, 'pending')
      assert.equal(byKey.gpt.error.code, 'PLUGIN_WAITING')
      assert.match(byKey.gpt.error.message, /the API key variable OPENAI_API_KEY is not set/)
      assert.match(byKey.gpt.error.hint, /export OPENAI_API_KEY=/)
      assert.equal(byKey.claude.state, 'pending')
      assert.match(byKey.claude.error.message, /YOKE_TEST_UNSET_ANTHROPIC_KEY is not set/)
    } finally {
      project.cleanup()
    }
  })
})
