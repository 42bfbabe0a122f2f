// The prompt plugin's section of `yoke inspect` (the `prompt/inspect` control): the system prompt the
// sections render now, one line of it per line, or a note that there is none.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { inspectSection, PromptSections } from '../../../plugins/prompt/index.ts'

describe('prompt/inspect', () => {
  it('answers the rendered prompt line by line, sections in order', () => {
    const sections = new PromptSections()
    sections.register({ name: 'rules', order: 10, text: 'Be brief.\nCite files.' }, 'a')
    sections.register({ name: 'task', text: ({ task }) => `Task: ${task ?? 'none'}` }, 'b')
    assert.deepEqual(inspectSection(sections.render()), {
      title: 'prompt',
      lines: ['Be brief.', 'Cite files.', '', 'Task: none'],
      data: 'Be brief.\nCite files.\n\nTask: none',
    })
  })

  it('says so when no section renders anything', () => {
    assert.deepEqual(inspectSection(new PromptSections().render()), {
      title: 'prompt',
      note: 'empty: no prompt sections',
      lines: [],
      data: '',
    })
  })
})
