/**
 * A form generated from a tool's input schema (JSON Schema): strings, numbers, integers,
 * booleans, enums, arrays of those and nested objects; anything else (oneOf, $ref, tuples, …)
 * falls back to a raw JSON field for that value. The whole form also has a raw-JSON mode.
 */
import { h, type ComponentChildren } from 'preact'

export interface Schema {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  enum?: unknown[]
  const?: unknown
  default?: unknown
  description?: string
  title?: string
}

type Value = unknown
type OnChange = (v: Value) => void

const typeOf = (s: Schema): string | undefined =>
  Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type

/** Whether a schema (and everything inside it) can be drawn as fields, not raw JSON. */
export function formable(s: Schema | undefined): boolean {
  if (!s) return false
  if (s.enum) return s.enum.every((v) => ['string', 'number', 'boolean'].includes(typeof v))
  switch (typeOf(s)) {
    case 'string':
    case 'number':
    case 'integer':
    case 'boolean':
      return true
    case 'array':
      return formable(s.items)
    case 'object':
      return s.properties !== undefined
    default:
      return false
  }
}

/** The value a fresh form starts from: defaults, else empty of the right kind. */
export function initial(s: Schema): Value {
  if (s.default !== undefined) return structuredClone(s.default)
  if (s.const !== undefined) return s.const
  if (typeOf(s) === 'object') {
    const out: Record<string, Value> = {}
    for (const [k, p] of Object.entries(s.properties ?? {})) {
      const v = (s.required ?? []).includes(k) ? initial(p) : p.default
      if (v !== undefined) out[k] = v
    }
    return out
  }
  if (typeOf(s) === 'array') return []
  return undefined
}

function scalarInput(name: string, s: Schema, value: Value, onChange: OnChange) {
  if (s.enum) {
    const options = s.enum.map((v) => h('option', { value: JSON.stringify(v) }, String(v)))
    return h(
      'select',
      {
        name,
        value: value === undefined ? '' : JSON.stringify(value),
        onChange: (e: Event) => {
          const raw = (e.target as HTMLSelectElement).value
          onChange(raw === '' ? undefined : JSON.parse(raw))
        },
      },
      h('option', { value: '' }, '—'),
      options,
    )
  }
  const t = typeOf(s)
  if (t === 'boolean')
    return h('input', {
      type: 'checkbox',
      name,
      checked: value === true,
      onChange: (e: Event) => onChange((e.target as HTMLInputElement).checked),
    })
  const numeric = t === 'number' || t === 'integer'
  return h('input', {
    type: numeric ? 'number' : 'text',
    step: t === 'integer' ? 1 : 'any',
    name,
    value: value === undefined ? '' : String(value),
    onInput: (e: Event) => {
      const raw = (e.target as HTMLInputElement).value
      onChange(raw === '' ? undefined : numeric ? Number(raw) : raw)
    },
  })
}

function arrayField(name: string, s: Schema, value: Value, onChange: OnChange) {
  const list = Array.isArray(value) ? value : []
  const set = (i: number, v: Value) => onChange(list.map((x, j) => (j === i ? v : x)))
  return h(
    'div',
    { class: 'array' },
    list.map((item, i) =>
      h(
        'div',
        { class: 'array-item', key: i },
        field(`${name}[${i}]`, s.items ?? {}, item, (v) => set(i, v)),
        h(
          'button',
          {
            type: 'button',
            class: 'small',
            onClick: () => onChange(list.filter((_, j) => j !== i)),
          },
          'remove',
        ),
      ),
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        onClick: () => onChange([...list, initial(s.items ?? {})]),
      },
      'add',
    ),
  )
}

function objectFields(name: string, s: Schema, value: Value, onChange: OnChange) {
  const obj = value && typeof value === 'object' ? (value as Record<string, Value>) : {}
  const set = (k: string, v: Value) => {
    const next = { ...obj }
    if (v === undefined) delete next[k]
    else next[k] = v
    onChange(next)
  }
  return h(
    'div',
    { class: 'fields' },
    Object.entries(s.properties ?? {}).map(([k, p]) =>
      row(name ? `${name}.${k}` : k, k, p, (s.required ?? []).includes(k), obj[k], (v) =>
        set(k, v),
      ),
    ),
  )
}

function row(path: string, label: string, s: Schema, required: boolean, v: Value, set: OnChange) {
  return h(
    'label',
    { class: 'field', key: path },
    h('span', { class: 'name' }, label, required ? h('b', { title: 'required' }, ' *') : null),
    field(path, s, v, set),
    s.description ? h('small', null, s.description) : null,
  )
}

function rawField(name: string, value: Value, onChange: OnChange): ComponentChildren {
  return h('textarea', {
    name,
    class: 'json',
    rows: 3,
    value: value === undefined ? '' : JSON.stringify(value, null, 2),
    onChange: (e: Event) => {
      const raw = (e.target as HTMLTextAreaElement).value
      try {
        onChange(raw.trim() === '' ? undefined : JSON.parse(raw))
      } catch {}
    },
  })
}

/** The field for one value of schema `s`. */
export function field(
  name: string,
  s: Schema,
  value: Value,
  onChange: OnChange,
): ComponentChildren {
  if (!formable(s)) return rawField(name, value, onChange)
  if (s.enum) return scalarInput(name, s, value, onChange)
  const t = typeOf(s)
  if (t === 'array') return arrayField(name, s, value, onChange)
  if (t === 'object') return h('fieldset', null, objectFields(name, s, value, onChange))
  return scalarInput(name, s, value, onChange)
}

/** The form's top level: an object schema's fields (no fieldset around them). */
export function SchemaFields(props: { schema: Schema; value: Value; onChange: OnChange }) {
  const s = props.schema
  if (typeOf(s) === 'object' || s.properties) {
    const fields = objectFields('', { ...s, type: 'object' }, props.value, props.onChange)
    return Object.keys(s.properties ?? {}).length
      ? fields
      : h('p', { class: 'muted' }, 'No arguments.')
  }
  return h('div', { class: 'fields' }, field('args', s, props.value, props.onChange))
}
