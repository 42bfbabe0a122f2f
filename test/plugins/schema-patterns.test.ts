// The pattern check for tool schemas from MCP servers and packages (exponential backtracking).
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { backtracks, riskyPattern } from '../../src/runtime/schema-safety.ts'

it('refuses repeated groups that can match one text in many ways, and keeps ordinary patterns', () => {
  for (const p of [
    '^(a|aa)+$',
    '(a+)+',
    '(a*)*b',
    '^(\\w+\\s?)*$',
    '(x?){2,}',
    '((ab)+)*',
    '(.*a){3,}',
  ])
    assert.ok(backtracks(p), p)
  for (const p of [
    '^[a-z0-9_-]{1,64}$',
    '^\\d{4}-\\d{2}-\\d{2}$',
    '(ab)+',
    '(abc)?x*',
    '^[(+*)]+$',
    '\\(a+\\)+',
    '(a){1}',
    '^https?://[^/]+/.*$',
  ])
    assert.ok(!backtracks(p), p)
})

it('finds a risky pattern anywhere in a schema, patternProperties keys included', () => {
  assert.match(
    riskyPattern({ type: 'object', properties: { a: { type: 'string', pattern: '^(a|aa)+$' } } })!,
    /exponential time/,
  )
  assert.ok(riskyPattern({ type: 'object', patternProperties: { '^(x+)+$': { type: 'string' } } }))
  assert.equal(
    riskyPattern({ type: 'object', properties: { a: { type: 'string', pattern: '^[a-z]+$' } } }),
    undefined,
  )
})
