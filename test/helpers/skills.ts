/**
 * A kernel for the skills tests: the runtime, the prompt, a project service for `p`, and one
 * skills instance of `config` (default: the project's `skills` directory, unwatched), settled.
 */
import promptPlugin from '../../plugins/prompt/index.ts'
import skillsPlugin, { type SkillsApi } from '../../plugins/skills/index.ts'
import { kernelWith } from './kernel.ts'

export async function skillsKernel(
  p: { dir: string; home: string },
  config: Record<string, unknown> = {},
) {
  const project = {
    name: 'project',
    apply: (ctx: any) => void ctx.provide('project', { dir: p.dir, home: p.home }),
  }
  const { kernel, rt } = await kernelWith([
    ['prompt', promptPlugin],
    ['project', project],
    ['skills', skillsPlugin, { dirs: ['skills'], watch: false, ...config }],
  ])
  return {
    kernel,
    skills: kernel.services.get('skills')!.value as SkillsApi,
    rt,
    prompt: kernel.services.get('prompt')!.value as { render(): string },
  }
}
