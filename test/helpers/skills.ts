/**
 * A kernel for the skills tests: the runtime, the prompt, a project service for `p`, and one
 * skills instance of `config` (default: the project's `skills` directory, unwatched), settled.
 */
import promptPlugin from '../../plugins/prompt/index.ts'
import skillsPlugin, { type SkillChange, type SkillsApi } from '../../plugins/skills/index.ts'
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

/**
 * Does `act` until a change `pick` accepts is announced (a watcher just armed may miss one write);
 * resolves with that change, fails after `ms`.
 */
export function changeWhere(
  skills: SkillsApi,
  pick: (c: SkillChange) => boolean,
  act: () => void,
  ms = 10_000,
): Promise<SkillChange> {
  return new Promise<SkillChange>((resolve, reject) => {
    let done = false // a tapable tap stays: once settled, it only ignores what comes
    const again = setInterval(act, 250)
    const stop = () => {
      done = true
      clearTimeout(timer)
      clearInterval(again)
    }
    const timer = setTimeout(() => {
      stop()
      reject(new Error(`no such skills change in ${ms} ms`))
    }, ms)
    skills.hooks.change.tap('wait', (c) => {
      if (done || !pick(c)) return
      stop()
      resolve(c)
    })
    act()
  })
}
