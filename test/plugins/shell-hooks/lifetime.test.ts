// An after_tool_call hook runs beside the call (nobody awaits it): when its instance goes, the
// hook's process group goes with it, so nothing it started writes on into a tree being removed.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { stringify } from 'yaml'
import { composedProject, hookProgram } from '../../conformance/hooks.ts'
import { tempProject } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

it('a running after_tool_call hook is killed when its instance is disposed', async () => {
  const project = tempProject()
  // the hook records its pid, then sleeps in a child of its own (the group kill must reach it)
  const program = hookProgram(
    project.dir,
    'slow-after.sh',
    'sleep 300 & echo $! >> "$0.pids"; wait',
  )
  const composed = await composedProject(project, () =>
    project.write(
      'yoke.config.yaml',
      stringify({
        preset: 'minimal',
        plugins: {
          after: {
            use: 'shell-hooks',
            config: {
              hooks: [{ event: 'after_tool_call', command: [program.file], timeout_ms: 600_000 }],
            },
          },
        },
      }),
    ),
  )
  try {
    const rt = composed.composition.runtime!
    rt.register({ name: 'work', execute: () => 'done' }, 'test')
    assert.equal((await rt.call('work')).status, 'ok')
    await until('the hook and its sleep run', () => program.pids().length === 2, { ms: 60_000 })
    const pids = program.pids()
    assert.ok(pids.every(alive))
    await composed.composition.close()
    await until('the hook and its sleep are gone', () => !pids.some(alive), { ms: 30_000 })
  } finally {
    await composed.composition.close()
    project.cleanup()
  }
})
