// The dev's log file keeps every record for as long as it lives, so a URL's token (the web
// console's launch URL) is masked there; the rest of the line is kept as it was.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { logWriter, unsecret } from '../../src/cli/logs.ts'

describe('the dev log file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'yoke-logs-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('masks token= in URLs, in messages and errors, and keeps the rest', () => {
    const file = join(dir, 'dev.log')
    const write = logWriter(
      () => file,
      (m) => assert.fail(m),
    )
    write({
      level: 'info',
      message: 'web console at http://127.0.0.1:4100/?token=s3cr3t-abc (`yoke console` opens it)',
    } as never)
    write({
      level: 'warn',
      message: 'x',
      error: new Error('GET http://127.0.0.1:4100/api?x=1&token=another-secret failed'),
    } as never)
    const text = readFileSync(file, 'utf8')
    assert.ok(!text.includes('s3cr3t-abc') && !text.includes('another-secret'), text)
    assert.match(text, /http:\/\/127\.0\.0\.1:4100\/\?token=… \(`yoke console` opens it\)/)
    assert.match(text, /\?x=1&token=… failed/)
  })

  it('leaves text without a token alone', () => {
    for (const text of ['tokens=3', 'maxTokens=5', 'a token=', 'no url here'])
      assert.equal(unsecret(text), text)
  })
})
