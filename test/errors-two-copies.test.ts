// Error identity is the code (DESIGN §10): a YokeError made by another copy of yoke — the build
// beside the source, a plugin package that brings its own yoke — keeps its code and hint through
// the pipeline, and codes one copy declares have their hints in the other's catalogue.
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, describe, it } from 'node:test'
import { ToolRuntime, YokeError, errorCatalogue } from '../src/index.ts'
import { ROOT } from './helpers/project.ts'

type ErrorsModule = typeof import('../src/errors.ts')
const dir = mkdtempSync(join(tmpdir(), 'yoke-two-copies-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** A second, separate instance of the errors module: a copy of the file, imported by its own URL. */
async function secondCopy(): Promise<ErrorsModule> {
  const file = join(dir, 'errors-copy.ts')
  copyFileSync(join(ROOT, 'src', 'errors.ts'), file)
  return (await import(pathToFileURL(file).href)) as ErrorsModule
}

describe('two copies of yoke in one process', () => {
  it('a YokeError of the other copy is a YokeError here, and its code survives a tool body', async () => {
    const other = await secondCopy()
    assert.notEqual(other.YokeError, YokeError, 'a separate module instance')
    const theirs = new other.YokeError('TIMEOUT', { name: 'slow', ms: 5 })
    assert.ok(theirs instanceof YokeError)
    assert.ok(new YokeError('TIMEOUT', { name: 'x', ms: 1 }) instanceof other.YokeError)
    assert.ok(!(new Error('plain') instanceof YokeError))
    assert.ok(!({ code: 'TIMEOUT' } instanceof YokeError), 'a look-alike object is not one')

    const rt = new ToolRuntime()
    rt.register({ name: 'slow', execute: () => Promise.reject(theirs) }, 'plugin-with-own-yoke')
    const result = await rt.call('slow')
    assert.equal(result.status, 'TIMEOUT')
    assert.equal(result.error!.hint, theirs.hint)
  })

  it("a code the other copy declares has its hint in this copy's catalogue", async () => {
    const other = await secondCopy()
    other.defineErrors('weather', {
      WEATHER_STATION_DOWN: { message: 'station {id} is down', hint: 'Try another station.' },
    })
    assert.equal(errorCatalogue().get('WEATHER_STATION_DOWN')?.hint, 'Try another station.')
    const rt = new ToolRuntime()
    rt.register(
      {
        name: 'weather',
        execute: () => {
          throw new other.YokeError('WEATHER_STATION_DOWN' as 'TIMEOUT', { id: 7 })
        },
      },
      'weather',
    )
    const result = await rt.call('weather')
    assert.equal(result.status, 'WEATHER_STATION_DOWN')
    assert.equal(result.error!.message, 'station 7 is down')
    assert.equal(result.error!.hint, 'Try another station.')
  })

  it('the build and the source loaded side by side agree', async (t) => {
    const built = join(ROOT, 'dist', 'src', 'errors.js')
    if (!existsSync(built)) return t.skip('no build (dist/): npm test builds it first')
    const dist = (await import(pathToFileURL(built).href)) as ErrorsModule
    assert.ok(new dist.YokeError('INTEGRITY_FAILED', {}) instanceof YokeError)
    assert.ok(new YokeError('MCP_NAME_CONFLICT' as 'TIMEOUT', {}) instanceof dist.YokeError)
  })
})
