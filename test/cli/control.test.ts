// The control socket's questions: the dev asks the asker (an approval for `yoke tools call` into a
// running dev), the asker answers; when someone else answers first (the web console), the dev
// withdraws the question, and the asker's answerer sees its signal abort with who answered.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ask, listen } from '../../src/cli/control.ts'

describe('control socket questions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'yoke-control-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('carries a question and its answer both ways', async () => {
    const path = join(dir, 'a.sock')
    const close = await listen(path, async (_request, session) => session.ask({ q: 'allow?' }))
    try {
      const reply = await ask(path, { cmd: 'tools-call' }, { onAsk: async () => 'allow-once' })
      assert.deepEqual(reply, { status: 'ok', answer: 'allow-once' })
    } finally {
      await close()
    }
  })

  it("withdraws a question another side answered first, and the asker's answerer is told who", async () => {
    const path = join(dir, 'b.sock')
    const outrun = Object.assign(new Error('console answered first (allow-once)'), {
      by: 'console',
      answer: 'allow-once',
    })
    const close = await listen(path, async (_request, session) => {
      const race = new AbortController()
      const asked = session.ask({ q: 'allow?' }, race.signal).then(
        () => 'answered',
        (err: unknown) => `rejected: ${(err as Error).message}`,
      )
      setTimeout(() => race.abort(outrun), 20)
      return asked
    })
    try {
      let seen: unknown
      const reply = await ask(
        path,
        { cmd: 'tools-call' },
        {
          // a prompt that waits for a person: it ends only when the question is withdrawn
          onAsk: (_question, withdrawn) =>
            new Promise((_, reject) =>
              withdrawn.addEventListener('abort', () => {
                seen = withdrawn.reason
                reject(withdrawn.reason)
              }),
            ),
        },
      )
      assert.deepEqual(reply, {
        status: 'ok',
        answer: 'rejected: console answered first (allow-once)',
      })
      assert.equal((seen as { by?: string }).by, 'console')
      assert.equal((seen as { answer?: string }).answer, 'allow-once')
      assert.match((seen as Error).message, /console answered first/)
    } finally {
      await close()
    }
  })
})
