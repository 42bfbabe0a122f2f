// todos: a plugin in plain JavaScript. It provides a `todos` service and registers three tools;
// todo_clear is high risk, so the base preset's policy asks for approval before it runs.
import { definePlugin } from 'yoke'

export default definePlugin({
  name: 'todos',
  inject: ['runtime'],
  provides: ['todos'],
  apply(ctx, config) {
    const max = config.max ?? 10
    const todos = []
    ctx.provide('todos', { count: () => todos.length })
    ctx.runtime.register({
      name: 'todo_add',
      description: 'Add a todo.',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string', minLength: 1 } },
        required: ['text'],
        additionalProperties: false,
      },
      execute: ({ text }) => {
        if (todos.length >= max)
          return { content: [{ type: 'text', text: `the list is full (${max})` }], isError: true }
        todos.push(text)
        return `added "${text}" (${todos.length} in all)`
      },
    })
    ctx.runtime.register({
      name: 'todo_list',
      description: 'List the todos.',
      concurrency: 'safe',
      execute: () => ({
        content: [
          { type: 'text', text: todos.map((t, i) => `${i + 1}. ${t}`).join('\n') || '(none)' },
        ],
        structured: { todos },
      }),
    })
    ctx.runtime.register({
      name: 'todo_clear',
      description: 'Delete every todo.',
      risk: 'high',
      execute: () => `cleared ${todos.splice(0).length} todos`,
    })
  },
})
