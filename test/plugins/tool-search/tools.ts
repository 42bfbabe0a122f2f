// What the tool-search tests search: a registered tool with only the fields ranking reads.
import type { RegisteredTool } from '../../../src/index.ts'

export const tool = (name: string, description: string, source = 'test'): RegisteredTool =>
  ({
    name,
    description,
    source,
    risk: 'low',
    inputSchema: { type: 'object', properties: {} },
    annotations: {},
  }) as unknown as RegisteredTool
