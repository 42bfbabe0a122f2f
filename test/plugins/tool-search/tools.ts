// What the tool-search tests search: a registered tool with only the fields ranking reads.
import { join } from 'node:path'
import type { RegisteredTool } from '../../../src/index.ts'
import { ROOT } from '../../helpers/project.ts'

export const tool = (name: string, description: string, source = 'test'): RegisteredTool =>
  ({
    name,
    description,
    source,
    risk: 'low',
    inputSchema: { type: 'object', properties: {} },
    annotations: {},
  }) as unknown as RegisteredTool

/** The fixture plugin that registers the tools its config lists (test/fixtures/tool-search/tools.mjs). */
export const LISTED = join(ROOT, 'test/fixtures/tool-search/tools.mjs')

/** Everyday tools of five kinds, as the listed fixture takes them: what meaning and phrases are tried on. */
export const EVERYDAY = [
  { name: 'move_file', description: 'Move a file or a directory to another path.' },
  { name: 'get_forecast', description: 'Get the weather forecast for a location.' },
  { name: 'send_email', description: 'Send an email message to a recipient.' },
  { name: 'create_issue', description: 'Create a new issue in a repository.' },
  { name: 'read_file', description: 'Read the contents of a file.' },
  { name: 'list_events', description: 'List the calendar events in a date range.' },
]

/** The everyday tools of these names. */
export const everyday = (...names: string[]) => EVERYDAY.filter((t) => names.includes(t.name))
