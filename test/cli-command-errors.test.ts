// A plugin's commands module is imported alone (`yoke --help` composes nothing): the codes its
// errors module declares beside it load too, so a command's coded error is printed with its hint,
// never "not in the catalogue" (issue 27: every INSTALL_* error ended with that).
import assert from 'node:assert/strict'
import { mkdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { it } from 'node:test'
import { ROOT, runYoke, suiteProjects } from './helpers/project.ts'

const projects = suiteProjects()

it("a local plugin's command error has its catalogue hint though the commands module never imports errors", async () => {
  const p = projects({
    'yoke.config.yaml': 'plugins:\n  weather:\n    use: ./weather/index.mjs\n',
    'weather/index.mjs': "export default { name: 'weather', apply() {} }\n",
    'weather/errors.mjs': `import { defineErrors } from 'yoke/cli'
export const errors = defineErrors('weather', {
  WEATHER_STATION_DOWN: { message: 'station {id} does not answer', hint: 'Try another station.' },
})
`,
    // no import of ./errors.mjs here, and nothing composes: only discovery can load the codes
    'weather/commands.mjs': `import { YokeError } from 'yoke/cli'
export const commands = [{
  name: 'station',
  summary: 'asks a weather station',
  run: () => { throw new YokeError('WEATHER_STATION_DOWN', { id: 7 }) },
}]
`,
  })
  // the project has yoke installed, as a plugin's project does
  mkdirSync(join(p.dir, 'node_modules'))
  symlinkSync(ROOT, join(p.dir, 'node_modules', 'yoke'))
  const run = await runYoke(['station'], { cwd: p.dir, home: p.home })
  assert.equal(run.code, 1, run.stderr)
  assert.match(run.stderr, /WEATHER_STATION_DOWN station 7 does not answer/)
  assert.match(run.stderr, /Try another station\./)
  assert.doesNotMatch(run.stderr, /not in the catalogue/)
})
