/**
 * notes: an example plugin with native tools. It keeps notes in memory and registers four tools
 * through the runtime (each one an effect of the instance: reload it and they are re-registered),
 * plus a prompt section that tells a model how many notes there are.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { definePlugin } from 'yoke'

export default definePlugin({
  name: 'notes',
  inject: ['runtime', 'prompt'],
  config: z.object({ max: z.number().int().positive().default(100) }).strict(),
  apply(ctx, config) {
    const notes: string[] = []
    ctx.runtime.register({
      name: 'note_add',
      description: 'Add a note.',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string', minLength: 1 } },
        required: ['text'],
        additionalProperties: false,
      },
      concurrency: 'exclusive',
      execute: ({ text }) => {
        if (notes.length >= config.max)
          return {
            content: [{ type: 'text', text: `the notebook is full (${config.max})` }],
            isError: true,
          }
        notes.push(String(text))
        return `noted (${notes.length} in all)`
      },
    })
    ctx.runtime.register({
      name: 'note_list',
      description: 'List the notes.',
      concurrency: 'safe',
      execute: () => ({
        content: [
          { type: 'text', text: notes.map((n, i) => `${i + 1}. ${n}`).join('\n') || '(no notes)' },
        ],
        structured: { notes },
      }),
    })
    ctx.runtime.register({
      name: 'note_clear',
      description: 'Delete every note.',
      risk: 'high', // asks for approval under the default policy
      execute: () => `cleared ${notes.splice(0).length} notes`,
    })
    ctx.runtime.register({
      name: 'note_wait',
      description:
        'Wait a while, reporting progress every 100 ms (to try cancellation and timeouts).',
      inputSchema: {
        type: 'object',
        properties: { ms: { type: 'integer', minimum: 0, maximum: 600000 } },
        required: ['ms'],
      },
      concurrency: 'safe',
      execute: async ({ ms }, call) => {
        for (let waited = 0; waited < Number(ms); waited += 100) {
          call.progress({ progress: waited, total: Number(ms), message: 'waiting' })
          await sleep(Math.min(100, Number(ms) - waited), undefined, { signal: call.signal })
        }
        return `waited ${ms} ms`
      },
    })
    ctx.prompt.register({
      name: 'notes',
      order: 50,
      text: () => `You can keep notes with note_add and note_list; there are ${notes.length}.`,
    })
  },
})
