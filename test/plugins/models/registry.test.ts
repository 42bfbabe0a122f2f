// The models registry: provider instances offer their kinds (and withdraw them when they unload),
// a model is made by kind with the key read from the environment, and what is missing is named.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import anthropic from '../../../plugins/anthropic/index.ts'
import type { ModelClient, ModelRegistry } from '../../../plugins/models/api.ts'
import models from '../../../plugins/models/index.ts'
import openai from '../../../plugins/openai/index.ts'
import { Kernel, toPlugin, validateConfig, YokeError, type Plugin } from '../../../src/index.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'

const spawn = async (kernel: Kernel, plugin: unknown, config: unknown, key: string) => {
  const p = toPlugin(plugin) as Plugin
  const checked = validateConfig(p, config)
  assert.ok('value' in checked, JSON.stringify(checked))
  const fiber = kernel.spawn(p, checked.value, { key })
  await kernel.whenSettled(fiber, 5000)
  assert.equal(fiber.state, 'active', fiber.error?.message)
  return fiber
}

describe('the models registry', () => {
  let server: ModelServer
  let kernel: Kernel
  const registry = () => kernel.services.get('models')!.value as ModelRegistry
  before(async () => {
    server = await modelServer(() => ({ text: 'made by kind' }))
    kernel = new Kernel()
    await spawn(kernel, models, {}, 'models')
  })
  after(async () => {
    await kernel.dispose()
    await server.close()
  })

  it('an instance offers its kind; with model: false it provides no model', async () => {
    assert.deepEqual(registry().kinds(), [])
    const fiber = await spawn(kernel, anthropic, { model: false }, 'anthropic')
    assert.deepEqual(registry().kinds(), ['anthropic'])
    assert.equal(kernel.services.get('model'), undefined)
    await kernel.remove(fiber)
    assert.deepEqual(registry().kinds(), [], 'withdrawn with the instance')
  })

  it('makes a model of an offered kind, with the key from the variable the spec names', async () => {
    const fiber = await spawn(
      kernel,
      openai,
      { model: 'main', apiKeyEnv: 'none', baseUrl: server.openaiBaseUrl },
      'model',
    )
    try {
      assert.deepEqual(registry().kinds(), ['openai'])
      process.env.YOKE_TEST_LANE_KEY = 'sk-lane-1234'
      const model: ModelClient = registry().create({
        provider: 'openai',
        model: 'lane-model',
        apiKeyEnv: 'YOKE_TEST_LANE_KEY',
        baseUrl: server.openaiBaseUrl,
        maxRetries: 0,
      })
      assert.equal(model.model, 'lane-model')
      const answer = await model.complete({
        system: '',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [],
      })
      assert.equal(answer.text, 'made by kind')
      assert.equal(server.requests.at(-1)!.body.model, 'lane-model')
      assert.equal(server.requests.at(-1)!.headers.authorization, 'Bearer sk-lane-1234')
    } finally {
      delete process.env.YOKE_TEST_LANE_KEY
      await kernel.remove(fiber)
    }
  })

  it('a kind no instance offers, and a key variable that is not set, are MODEL_FAILED naming them', async () => {
    const missing = (() => {
      try {
        registry().create({ provider: 'anthropic', model: 'm' }, 'lane "careful"')
      } catch (err) {
        return err
      }
    })() as YokeError
    assert.ok(missing instanceof YokeError)
    assert.equal(missing.code, 'MODEL_FAILED')
    assert.match(
      missing.message,
      /lane "careful": no instance offers the model provider "anthropic"/,
    )
    const fiber = await spawn(kernel, anthropic, { model: false }, 'anthropic')
    try {
      assert.throws(
        () =>
          registry().create(
            { provider: 'anthropic', model: 'm', apiKeyEnv: 'YOKE_TEST_NEVER_SET_KEY' },
            'lane "careful"',
          ),
        /lane "careful": the API key variable YOKE_TEST_NEVER_SET_KEY is not set/,
      )
    } finally {
      await kernel.remove(fiber)
    }
  })
})
