/**
 * @module tool-search/asking
 * How people ask, taken off before a query is ranked: "is there a way to", "I want to", "help me",
 * "can you please" say that something is asked, not what. Most of their words are stopwords
 * already; the rest ("way", "help", "trying", "possible") would be searched as needs, and would
 * count against a match as query words no tool covers.
 */

/** A request's opening (repeatable: "hi, can you please help me…"), as a pattern. */
const OPENING = new RegExp(
  '^(?:' +
    [
      'hey|hi|hello|ok|okay|so|also|now|then',
      'please|pls|kindly',
      '(?:can|could|would|will) you(?: please)?(?: help me)?',
      '(?:can|could|may) (?:i|we)',
      "i(?:'d| would) like(?: you)? to|i want(?: you)? to|i need(?: you)? to|i wanna",
      "i(?:'m| am) (?:trying|looking|hoping|wanting) (?:to|for a way to|for a tool to|for something to)",
      '(?:is|are) there (?:a|any) (?:way|tool|option|command|function|method|api)s? (?:to|for|that|which)(?: can| lets me| will)?',
      'is there anything (?:to|that|which)(?: can)?',
      'is it possible to|is there a way i can|how (?:do|can|could|would|should) (?:i|we|you)',
      "what(?:'s| is) the (?:best |easiest |simplest )?way to",
      "help me(?: to)?|let me|let us|let's",
      'i have to|we have to|we need to|we want to',
      '(?:a|some) (?:tool|way|command) (?:to|for|that)',
    ].join('|') +
    ')[\\s,:!?]+',
  'i',
)

/** The query without how it is asked (as it was when nothing is left). */
export function withoutAsking(query: string): string {
  let rest = query.trim()
  for (let i = 0; i < 6; i++) {
    const next = rest.replace(OPENING, '')
    if (next === rest) break
    rest = next
  }
  return rest || query
}

/**
 * How people say what a tool's name says (document expansion at index time, the doc2query idea
 * without a model): the words a user uses for a name's verb or object, from its operation to its
 * everyday phrasing (`list` → show, which; `issue` → bug, ticket; `repository` → project).
 */
const GROUPS: string[][] = [
  [
    'get',
    'read',
    'fetch',
    'retrieve',
    'view',
    'show',
    'describe',
    'inspect',
    'see',
    'check',
    'look',
  ],
  ['list', 'enumerate', 'show', 'which', 'all', 'browse'],
  ['search', 'find', 'query', 'lookup', 'look', 'locate', 'seek'],
  ['create', 'add', 'new', 'insert', 'make', 'generate', 'open', 'start', 'write'],
  ['delete', 'remove', 'destroy', 'drop', 'erase', 'clear', 'rid', 'discard', 'trash'],
  ['update', 'edit', 'modify', 'set', 'change', 'patch', 'rename', 'alter', 'adjust'],
  ['send', 'post', 'publish', 'push', 'share', 'notify', 'broadcast', 'reply', 'tell', 'message'],
  ['run', 'execute', 'launch', 'invoke', 'trigger', 'kick'],
  ['stop', 'kill', 'terminate', 'cancel', 'halt', 'end', 'abort'],
  ['download', 'export', 'save', 'keep', 'backup'],
  ['upload', 'import', 'attach'],
  ['navigate', 'goto', 'visit', 'go', 'load', 'browse'],
  ['click', 'press', 'tap', 'hit'],
  ['merge', 'combine', 'land', 'join'],
  ['close', 'shut', 'resolve', 'finish'],
  ['summarize', 'summary', 'overview', 'explain', 'analyze', 'analyse'],
  ['screenshot', 'capture', 'snapshot', 'picture'],
  ['schedule', 'plan', 'book', 'calendar', 'appointment'],
  ['repository', 'repo', 'project', 'codebase'],
  ['issue', 'bug', 'ticket', 'problem'],
  ['pull', 'pr', 'review'],
  ['commit', 'history', 'log'],
  ['email', 'mail', 'inbox', 'message'],
  ['event', 'meeting', 'appointment'],
  ['file', 'document', 'doc'],
  ['directory', 'folder', 'dir'],
  ['process', 'program'],
  ['record', 'row', 'entry', 'item'],
  ['user', 'person', 'people', 'member', 'account'],
  ['chart', 'graph', 'plot', 'diagram', 'visualize'],
]

const EVERYDAY = new Map<string, string[]>()
for (const group of GROUPS)
  for (const word of group)
    EVERYDAY.set(
      word,
      [...new Set([...(EVERYDAY.get(word) ?? []), ...group])].filter((w) => w !== word),
    )

/** The everyday words for one of a tool's name words (none for a word the table lacks). */
export function everyday(word: string): readonly string[] {
  return EVERYDAY.get(word) ?? []
}
