/**
 * @module runtime/registry
 * Where tools live: one global layer plus nested scope layers (per agent, per session). The
 * nearest layer wins; `restrict` masks global tools for a scope (never its own). A deny mask is a
 * glob test at lookup time, so globals added later are admitted unless they match; an allow mask is
 * the set of globals that matched when it was made, so globals added later stay out.
 */
import type { ValidateFunction } from 'ajv'
import { YokeError } from '../errors.ts'
import { budgeted, createAjv, riskyPattern } from '../lib/schema-safety.ts'
import { depthOf } from './json.ts'
import type { RegisteredTool, ToolCall, ToolDefinition } from './types.ts'

export const GLOBAL = 'global'
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/
const LIMITS = { schemaDepth: 10, schemaBytes: 64 * 1024 }

/** Sync, deny-only: returns a reason to deny, or nothing. */
export type Guard = (call: ToolCall) => string | undefined | void

export interface Mask {
  allow?: string[]
  deny?: string[]
}

type Change = { added: string[]; removed: string[] }

interface Layer {
  parent?: string
  subagent: boolean
  /** the tool each name resolves to */
  tools: Map<string, RegisteredTool>
  /** older registrations a reload's new version stands in front of, newest first */
  shadowed: Map<string, RegisteredTool[]>
  masks: Array<(name: string) => boolean>
  guards: Guard[]
}

const ajv = createAjv() // patterns on a linear-time engine (schema-safety)
let nextId = 0

/** `mcp__github__*` → /^mcp__github__.*$/ : `*` any run, `?` one character. */
export function globToRegExp(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  )
}

export const matchesAny = (globs: readonly string[], name: string) =>
  globs.some((g) => globToRegExp(g).test(name))

export class ToolRegistry {
  readonly #global: Layer = {
    subagent: false,
    tools: new Map(),
    shadowed: new Map(),
    masks: [],
    guards: [],
  }
  /** which fiber registered a tool: the same owner key from another fiber may stand in front */
  readonly #fibers = new WeakMap<RegisteredTool, number | undefined>()
  readonly #layers = new Map<string, Layer>([[GLOBAL, this.#global]])
  readonly #chains = new Map<string, Layer[]>()
  /** the changes a batch holds back, per scope: announced once, when it ends */
  #held?: Map<string, Change>

  constructor(
    private readonly onChange: (added: string[], removed: string[], scope: string) => void,
  ) {}

  /**
   * Checks and adds a tool to a layer; returns its removal. A name is registered once per layer,
   * except that the new version of a reloading instance (the same owner key, another fiber) stands
   * in front of the old one: calls resolve to it at once, and the old one's removal uncovers
   * nothing, so no call sees the tool missing across the reload.
   */
  register(
    def: ToolDefinition,
    owner: string,
    scope = GLOBAL,
    fiber?: number,
  ): { tool: RegisteredTool; remove: () => void } {
    const layer = this.#layer(scope)
    const fail = (code: 'TOOL_INVALID' | 'TOOL_DUPLICATE', reason: string) =>
      new YokeError(code, { name: String(def?.name), owner, reason, scope })
    if (typeof def?.name !== 'string' || !TOOL_NAME.test(def.name))
      throw fail('TOOL_INVALID', 'names are 1-64 characters of A-Z a-z 0-9 _ -')
    if (typeof def.execute !== 'function') throw fail('TOOL_INVALID', 'it has no execute function')
    const schema = def.inputSchema ?? { type: 'object' }
    const schemaProblem = checkSchema(schema)
    if (schemaProblem) throw fail('TOOL_INVALID', schemaProblem)
    // compiled without $id and $schema (servers declare other dialects): ids of different tools (or of a reloaded one) must not collide in ajv
    const { $id: _id, $schema: _dialect, ...compiled } = schema
    // checked against the meta-schema now, compiled at the first call (a compile costs ~0.3 ms: a server's thousands of tools would stall the loop)
    if (!ajv.validateSchema(compiled))
      throw fail('TOOL_INVALID', `its input schema does not compile: ${ajv.errorsText(ajv.errors)}`)
    const validate = lazyValidate(compiled)
    const current = layer.tools.get(def.name)
    const replaces =
      current &&
      current.owner === owner &&
      fiber !== undefined &&
      this.#fibers.get(current) !== fiber
    if (current && !replaces)
      throw fail('TOOL_DUPLICATE', `instance "${current.owner}" already registered it`)
    const concurrency = def.concurrency === 'safe' ? 'safe' : 'exclusive' // anything unknown runs alone
    const tool: RegisteredTool = Object.freeze({
      ...def,
      source: def.source ?? 'native',
      risk: def.risk ?? 'low',
      concurrency,
      inputSchema: schema,
      owner,
      id: ++nextId,
      validate,
    })
    this.#fibers.set(tool, fiber)
    if (current) layer.shadowed.set(def.name, [current, ...(layer.shadowed.get(def.name) ?? [])])
    layer.tools.set(def.name, tool)
    this.#changed([def.name], current ? [def.name] : [], scope)
    return {
      tool,
      remove: () => {
        if (validate.schema) ajv.removeSchema(compiled) // compiled schemas would pile up over reloads
        const below = layer.shadowed.get(def.name) ?? []
        if (layer.tools.get(def.name) !== tool) {
          const rest = below.filter((t) => t !== tool)
          if (rest.length) layer.shadowed.set(def.name, rest)
          else layer.shadowed.delete(def.name)
          return
        }
        const [next, ...rest] = below
        if (rest.length) layer.shadowed.set(def.name, rest)
        else layer.shadowed.delete(def.name)
        if (next) layer.tools.set(def.name, next)
        else layer.tools.delete(def.name)
        this.#changed(next ? [def.name] : [], [def.name], scope)
      },
    }
  }

  /**
   * Runs `fn` with the change announcements held, then makes one per scope: listeners see every
   * name added and removed, and lookups see each change at once. A name added and removed within
   * the batch is announced as removed only (both lists: it was replaced and is there).
   */
  batch<T>(fn: () => T): T {
    if (this.#held) return fn()
    const held = (this.#held = new Map<string, Change>())
    try {
      return fn()
    } finally {
      this.#held = undefined
      for (const [scope, { added, removed }] of held) {
        const tools = this.#layers.get(scope)?.tools
        this.onChange(removed.length ? added.filter((n) => tools?.has(n)) : added, removed, scope)
      }
    }
  }

  #changed(added: string[], removed: string[], scope: string) {
    if (!this.#held) return this.onChange(added, removed, scope)
    const change = this.#held.get(scope) ?? { added: [], removed: [] }
    this.#held.set(scope, change)
    change.added.push(...added)
    change.removed.push(...removed)
  }

  /** The tool `name` as seen from `scope`: the nearest layer wins; global tools pass the masks. */
  resolve(name: string, scope = GLOBAL): RegisteredTool | undefined {
    for (const layer of this.#chain(scope)) {
      const tool = layer.tools.get(name)
      if (tool && (layer !== this.#global || this.admits(name, scope))) return tool
    }
    return undefined
  }

  /** Every tool visible from `scope`, nearest first, names unique. */
  list(scope = GLOBAL): RegisteredTool[] {
    const seen = new Map<string, RegisteredTool>()
    for (const layer of this.#chain(scope)) {
      for (const [name, tool] of layer.tools) {
        if (seen.has(name) || (layer === this.#global && !this.admits(name, scope))) continue
        seen.set(name, tool)
      }
    }
    return [...seen.values()]
  }

  /** Creates a scope layer under `parent` (default global); returns its removal. */
  createScope(key: string, options: { parent?: string; subagent?: boolean } = {}): () => void {
    if (this.#layers.has(key)) throw scopeError(key, key, 'a scope with this key exists')
    const parent = options.parent ?? GLOBAL
    const layer: Layer = {
      parent,
      subagent: options.subagent ?? this.#layer(parent).subagent,
      tools: new Map(),
      shadowed: new Map(),
      masks: [],
      guards: [],
    }
    this.#layers.set(key, layer)
    this.#chains.clear()
    return () => this.#removeScope(key, layer)
  }

  /** Removes a scope and, first, its descendants; their tools are announced as removed. */
  #removeScope(key: string, layer: Layer) {
    if (this.#layers.get(key) !== layer) return
    for (const [k, l] of this.#layers) if (l.parent === key) this.#removeScope(k, l)
    this.#layers.delete(key)
    this.#chains.clear()
    if (layer.tools.size) this.onChange([], [...layer.tools.keys()], key)
  }

  /** The scope an exclusive call excludes within: a subagent's calls are its agent's (DESIGN §10). */
  exclusionScope(scope: string): string {
    let layer = this.#layers.get(scope)
    while (layer?.subagent && layer.parent !== undefined)
      layer = this.#layers.get((scope = layer.parent))
    return scope
  }

  hasScope(scope: string): boolean {
    return this.#layers.has(scope)
  }

  isSubagent(scope: string): boolean {
    return this.#layers.get(scope)?.subagent ?? false
  }

  /** Masks the global tools seen from `scope`. */
  restrict(scope: string, mask: Mask): () => void {
    if (scope === GLOBAL)
      throw scopeError('restrict', scope, 'the global layer cannot be restricted; create a scope')
    if (!mask.allow && !mask.deny)
      throw scopeError('restrict', scope, 'a mask needs allow or deny globs')
    const allowed =
      mask.allow &&
      new Set([...this.#global.tools.keys()].filter((n) => matchesAny(mask.allow!, n)))
    const test = (name: string) =>
      (!allowed || allowed.has(name)) && !(mask.deny && matchesAny(mask.deny, name))
    return this.#add(this.#layer(scope), 'masks', test)
  }

  /** Adds a guard to a layer. */
  guard(fn: Guard, scope = GLOBAL): () => void {
    return this.#add(this.#layer(scope), 'guards', fn)
  }

  /** Guards in order: the global layer first, then the scope chain from farthest to nearest. */
  guardsFor(scope: string): Guard[] {
    const chain = this.#chain(scope)
    return chain.length === 1 ? chain[0].guards : [...chain].reverse().flatMap((l) => l.guards)
  }

  /** Adds to a layer's masks or guards copy-on-write, so a call iterating them is never disturbed. */
  #add<K extends 'masks' | 'guards'>(layer: Layer, list: K, item: Layer[K][number]): () => void {
    layer[list] = [...layer[list], item] as Layer[K]
    return () => void (layer[list] = layer[list].filter((x) => x !== item) as Layer[K])
  }

  #layer(scope: string): Layer {
    const layer = this.#layers.get(scope)
    if (!layer) throw scopeError(scope, scope, 'no such scope (create it with runtime.scope())')
    return layer
  }

  /** The layers from `scope` up to global, nearest first (cached: scopes change rarely, calls often). */
  #chain(scope: string): Layer[] {
    let chain = this.#chains.get(scope)
    if (!chain) this.#chains.set(scope, (chain = this.#walk(scope)))
    return chain
  }

  #walk(scope: string): Layer[] {
    const chain: Layer[] = []
    for (
      let layer = this.#layers.get(scope);
      layer;
      layer = layer.parent ? this.#layers.get(layer.parent) : undefined
    )
      chain.push(layer)
    if (!chain.includes(this.#global)) chain.push(this.#global)
    return chain
  }

  /** Whether the masks from `scope` up let a global tool named `name` through. */
  admits(name: string, scope: string): boolean {
    return this.#chain(scope).every((layer) => layer.masks.every((test) => test(name)))
  }
}

/** A scope that cannot be made, masked or found: TOOL_INVALID with the scope as its owner. */
const scopeError = (name: string, scope: string, reason: string) =>
  new YokeError('TOOL_INVALID', { name, owner: 'scope', scope, reason })

/**
 * A validate function that compiles `schema` on its first use. A schema that passed the
 * meta-schema but still does not compile (an unresolvable $ref) fails every call with the reason.
 */
function lazyValidate(schema: Record<string, unknown>): ValidateFunction {
  let compiled: ValidateFunction | undefined
  const validate = ((data: unknown) => {
    if (!compiled)
      try {
        compiled = budgeted(ajv.compile(schema))
        validate.schema = schema
      } catch (err) {
        const message = `the tool's input schema does not compile: ${(err as Error).message}`
        validate.errors = [
          { instancePath: '', schemaPath: '#', keyword: 'schema', params: {}, message },
        ]
        return false
      }
    const ok = compiled(data)
    validate.errors = compiled.errors
    return ok
  }) as ValidateFunction
  return validate
}

/**
 * Refuses schemas that are not objects, nest deeper than 10, serialize to more than 64 KiB, or hold
 * a pattern the linear-time engine does not run (riskyPattern): whatever the tool's source.
 */
export function checkSchema(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    return 'its input schema is not a JSON object'
  if ('type' in schema && (schema as { type: unknown }).type !== 'object')
    return 'its input schema must have type "object"'
  const depth = depthOf(schema) // first: stringify recurses
  if (depth > 64) return 'its input schema is not JSON: it nests past 64 levels or holds a cycle'
  if (depth > LIMITS.schemaDepth)
    return `its input schema nests ${depth} levels deep; the limit is ${LIMITS.schemaDepth}`
  let text: string
  try {
    text = JSON.stringify(schema)
  } catch (err) {
    return `its input schema is not JSON (${(err as Error).message})`
  }
  const bytes = Buffer.byteLength(text)
  if (bytes > LIMITS.schemaBytes)
    return `its input schema is ${bytes} bytes; the limit is ${LIMITS.schemaBytes}`
  return riskyPattern(schema)
}
