/**
 * A kernel for the skills tests: the runtime, the prompt, a project service for `p`, and one
 * skills instance of `config` (default: the project's `skills` directory, unwatched), settled.
 */
import assert from 'node:assert/strict'
import promptPlugin from '../../plugins/prompt/index.ts'
import skillsPlugin, { type SkillsApi } from '../../plugins/skills/index.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Plugin,
  type ToolRuntime,
} from '../../src/index.ts'

export async function skillsKernel(
  p: { dir: string; home: string },
  config: Record<string, unknown> = {},
) {
  const kernel = new Kernel()
  kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
  kernel.spawn(toPlugin(promptPlugin) as Plugin, {}, { key: 'prompt' })
  kernel.spawn(
    toPlugin({
      name: 'project',
      apply: (ctx: any) => void ctx.provide('project', { dir: p.dir, home: p.home }),
    }) as Plugin,
    {},
    { key: 'project' },
  )
  const plugin = toPlugin(skillsPlugin) as Plugin
  const checked = validateConfig(plugin, { dirs: ['skills'], watch: false, ...config })
  assert.ok('value' in checked)
  kernel.spawn(plugin, checked.value, { key: 'skills' })
  await kernel.settled()
  return {
    kernel,
    skills: kernel.services.get('skills')!.value as SkillsApi,
    rt: kernel.services.get('runtime')!.value as ToolRuntime,
    prompt: kernel.services.get('prompt')!.value as { render(): string },
  }
}
