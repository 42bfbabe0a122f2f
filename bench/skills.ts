/**
 * Skills: index 1,000 generated skills cold, against reading the same files without parsing; and a
 * single edit reflected (file write → catalog change event), against chokidar with the same
 * write-finish wait watching the same directory.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { watch } from 'chokidar'
import skillsPlugin from '../plugins/skills/index.ts'
import promptPlugin from '../plugins/prompt/index.ts'
import { makeFilter, SkillIndex } from '../plugins/skills/skill-index.ts'
import { Kernel, runtimePlugin, toPlugin, validateConfig, type Plugin } from '../src/index.ts'
import { tempProject } from '../test/helpers/project.ts'
import { percentile, row, sleep, timeEdits } from './stats.ts'

const COUNT = 1000
const EDITS = 30
const skillMd = (i: number, v = 0) =>
  `---\nname: skill-${i}\ndescription: Generated skill number ${i}, version ${v}. Use it when testing the index.\nrequires_bins: ls\n---\n# Skill ${i}\n\n${'Some instructions. '.repeat(20)}\n`

export async function skillsBench() {
  const files = Object.fromEntries(
    Array.from({ length: COUNT }, (_, i) => [`skills/skill-${i}/SKILL.md`, skillMd(i)]),
  )
  const project = tempProject(files)
  const root = project.path('skills')
  try {
    const median = (f: () => void) => {
      const xs: number[] = []
      for (let r = 0; r < 6; r++) {
        const t0 = performance.now()
        f()
        xs.push(performance.now() - t0)
      }
      xs.shift()
      return percentile(xs, 50)
    }
    const raw = median(() => {
      for (const d of readdirSync(root)) readFileSync(join(root, d, 'SKILL.md'), 'utf8')
    })
    const indexed = median(() => new SkillIndex([root], makeFilter(undefined, [])).scan())

    // edits: the real plugin, watching, in a kernel with the runtime and the prompt service
    const kernel = new Kernel()
    kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
    kernel.spawn(toPlugin(promptPlugin) as Plugin, {}, { key: 'prompt' })
    kernel.spawn(
      toPlugin({
        name: 'project',
        apply: (ctx: any) => void ctx.provide('project', { dir: project.dir, home: project.home }),
      }) as Plugin,
      {},
      { key: 'project' },
    )
    const plugin = toPlugin(skillsPlugin) as Plugin
    const cfg = validateConfig(plugin, { dirs: ['skills'] })
    kernel.spawn(plugin, 'value' in cfg ? cfg.value : {}, { key: 'skills' })
    await kernel.settled()
    await sleep(500) // the watcher's initial scan
    const skills = kernel.services.get('skills')!.value as {
      hooks: { change: { tap(n: string, f: () => void): void } }
    }
    let changed = () => {}
    skills.hooks.change.tap('bench', () => changed())
    const yoke = await timeEdits(
      EDITS,
      (i) => project.write(`skills/skill-${i}/SKILL.md`, skillMd(i, 1)),
      () => new Promise<void>((r) => (changed = r)),
      80,
    )
    await kernel.dispose()
    const watcher = watch(root, {
      ignoreInitial: true,
      awaitWriteFinish: { stabilityThreshold: 40, pollInterval: 10 },
    })
    await new Promise<void>((r) => watcher.once('ready', () => r()))
    const finish = await timeEdits(
      EDITS,
      (i) => project.write(`skills/skill-${i}/SKILL.md`, skillMd(i, 2)),
      () => new Promise<void>((r) => watcher.once('change', () => r())),
      80,
    )
    await watcher.close()

    console.log(
      `\nskills: index ${COUNT} generated skills cold (median of 5), against reading the same files`,
    )
    console.log(row(['', 'read files ms', 'index ms', 'ratio', 'goal']))
    console.log(row(['cold index', raw, indexed, `${(indexed / raw).toFixed(1)}×`, '≤ 200 ms']))
    console.log(
      `one edit, file write → catalog change event, ${EDITS} edits (ms); baseline: chokidar with the same write-finish wait`,
    )
    console.log(row(['', 'finish p50', 'p95', 'yoke p50', 'p95', 'yoke/finish', 'goal p50']))
    console.log(
      row([
        'edit',
        percentile(finish, 50),
        percentile(finish, 95),
        percentile(yoke, 50),
        percentile(yoke, 95),
        `${(percentile(yoke, 50) / percentile(finish, 50)).toFixed(2)}×`,
        '≤ 150',
      ]),
    )
  } finally {
    project.cleanup()
  }
}
