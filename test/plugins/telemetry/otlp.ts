/**
 * A loopback OTLP/HTTP receiver for the telemetry tests: it decodes `application/x-protobuf`
 * bodies with the official OTLP definitions (fixtures/opentelemetry-proto, parsed here: a small
 * proto3 reader for what those files use, no protobufjs) and `application/json` bodies as they
 * are, and keeps each request with its path and headers.
 */
import { readFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'

const PROTO_ROOT = join(import.meta.dirname, 'fixtures', 'opentelemetry-proto')
const FILES = [
  'common/v1/common',
  'resource/v1/resource',
  'trace/v1/trace',
  'metrics/v1/metrics',
  'collector/trace/v1/trace_service',
  'collector/metrics/v1/metrics_service',
].map((f) => join(PROTO_ROOT, 'opentelemetry', 'proto', `${f}.proto`))

interface Field {
  name: string
  type: string
  number: number
  repeated: boolean
}
interface MessageType {
  fullName: string
  fields: Map<number, Field>
}

/** Every message and enum of the OTLP files, by full name. */
export class ProtoSchema {
  readonly messages = new Map<string, MessageType>()
  readonly enums = new Set<string>()

  constructor(files = FILES) {
    for (const file of files) this.#parse(readFileSync(file, 'utf8'))
  }

  #parse(text: string) {
    const tokens = text
      .replace(/\/\/[^\n]*/g, '')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .match(/"[^"]*"|[A-Za-z_][\w.]*|\d+|[{}[\]=;<>,()]/g)!
    let i = 0
    let pkg = ''
    const skipStatement = () => {
      while (tokens[i] !== ';') i++
      i++
    }
    const block = (scope: string, kind: 'message' | 'enum') => {
      const name = tokens[i++]!
      const fullName = `${scope}.${name}`
      i++ // {
      if (kind === 'enum') {
        this.enums.add(fullName)
        let depth = 1
        for (; depth; i++) depth += tokens[i] === '{' ? 1 : tokens[i] === '}' ? -1 : 0
        return
      }
      const type: MessageType = { fullName, fields: new Map() }
      this.messages.set(fullName, type)
      body(type)
    }
    const body = (type: MessageType) => {
      while (tokens[i] !== '}') {
        const t = tokens[i]!
        if (t === ';')
          i++ // `};` after a nested enum
        else if (t === 'message' || t === 'enum') {
          i++
          block(type.fullName, t)
        } else if (t === 'oneof') {
          i += 3 // oneof name {
          body(type)
        } else if (t === 'reserved' || t === 'option') skipStatement()
        else {
          const repeated = t === 'repeated'
          if (repeated || t === 'optional') i++
          const fieldType = tokens[i++]!
          const name = tokens[i++]!
          i++ // =
          const number = Number(tokens[i++])
          type.fields.set(number, {
            name,
            type: `${type.fullName}\0${fieldType}`,
            number,
            repeated,
          })
          skipStatement()
        }
      }
      i++ // }
    }
    while (i < tokens.length) {
      const t = tokens[i++]!
      if (t === 'package') {
        pkg = tokens[i++]!
        i++
      } else if (t === 'message' || t === 'enum') block(pkg, t)
      else if (t === 'syntax' || t === 'import' || t === 'option') skipStatement()
    }
  }

  /** A field's type name resolved from the scope it is declared in, as protoc does. */
  resolve(scoped: string): string {
    const [scope, name] = scoped.split('\0') as [string, string]
    if (SCALARS.has(name)) return name
    const parts = scope.split('.')
    for (let n = parts.length; n >= 0; n--) {
      const candidate = [...parts.slice(0, n), name].join('.')
      if (this.messages.has(candidate) || this.enums.has(candidate)) return candidate
    }
    throw new Error(`unknown type ${name} in ${scope}`)
  }

  /** Decodes a message; bytes become hex, 64-bit integers strings, field names stay as in the .proto. */
  decode(typeName: string, buf: Uint8Array): Record<string, unknown> {
    const type = this.messages.get(typeName)
    if (!type) throw new Error(`unknown message ${typeName}`)
    const out: Record<string, unknown> = {}
    const r = new Reader(buf)
    while (r.pos < buf.length) {
      const key = Number(r.varint())
      const [number, wire] = [key >>> 3, key & 7]
      const field = type.fields.get(number)
      if (!field) {
        r.skip(wire)
        continue
      }
      const fieldType = this.resolve(field.type)
      const values =
        wire === 2 && PACKABLE.has(fieldType)
          ? r.packed(fieldType)
          : [this.#value(fieldType, wire, r)]
      if (field.repeated) ((out[field.name] ??= []) as unknown[]).push(...values)
      else out[field.name] = values[values.length - 1]
    }
    return out
  }

  /**
   * What in an OTLP/JSON body breaks the protobuf JSON mapping as OTLP specifies it: a key that is
   * not a field's lowerCamelCase name, a 64-bit integer that is not a decimal string, an enum that
   * is not an integer, an id (bytes) that is not lowercase hex of its size, a wrong shape.
   * `numbers` accepts a safe integer as a JSON number where the mapping prints a string (parsers
   * must accept both).
   */
  jsonProblems(typeName: string, value: unknown, at = '$', numbers = false): string[] {
    const type = this.messages.get(typeName)!
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return [`${at}: a ${typeName} must be an object`]
    const byJsonName = new Map(
      [...type.fields.values()].map((f) => [
        f.name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()),
        f,
      ]),
    )
    const problems: string[] = []
    for (const [key, v] of Object.entries(value)) {
      const field = byJsonName.get(key)
      if (!field) {
        problems.push(`${at}.${key}: no field of ${typeName} has this lowerCamelCase name`)
        continue
      }
      const items = field.repeated ? v : [v]
      if (!Array.isArray(items)) {
        problems.push(`${at}.${key}: a repeated field must be an array`)
        continue
      }
      const fieldType = this.resolve(field.type)
      items.forEach((item, i) => {
        const here = field.repeated ? `${at}.${key}[${i}]` : `${at}.${key}`
        if (this.messages.has(fieldType))
          problems.push(...this.jsonProblems(fieldType, item, here, numbers))
        else if (this.enums.has(fieldType)) {
          if (!Number.isInteger(item)) problems.push(`${here}: an enum must be an integer`)
        } else problems.push(...scalarProblem(fieldType, field.name, item, here, numbers))
      })
    }
    return problems
  }

  #value(type: string, wire: number, r: Reader): unknown {
    if (this.messages.has(type)) return this.decode(type, r.bytes())
    if (this.enums.has(type)) return Number(r.varint())
    return r.scalar(type, wire)
  }
}

const ID_BYTES: Record<string, number> = { trace_id: 16, span_id: 8, parent_span_id: 8 }

/** `numbers`: a 64-bit integer may be a JSON number (the mapping accepts one; it prints strings) */
function scalarProblem(
  type: string,
  name: string,
  value: unknown,
  at: string,
  numbers: boolean,
): string[] {
  const bad = (what: string) => [`${at}: ${what} (${JSON.stringify(value)})`]
  if (/64$/.test(type) && !/^-?\d+$/.test(String(value)))
    return bad('a 64-bit integer must be a decimal string')
  if (/64$/.test(type) && typeof value !== 'string' && !(numbers && Number.isSafeInteger(value)))
    return bad('a 64-bit integer must be a string')
  if (type === 'bytes' && name in ID_BYTES) {
    const hex = new RegExp(`^[0-9a-f]{${2 * ID_BYTES[name]!}}$`)
    return typeof value === 'string' && (hex.test(value) || (name === 'parent_span_id' && !value))
      ? []
      : bad('an OTLP/JSON id must be lowercase hex of its size')
  }
  if (type === 'string' && typeof value !== 'string') return bad('a string')
  if (type === 'bool' && typeof value !== 'boolean') return bad('a boolean')
  if ((type === 'double' || type === 'float' || /32$/.test(type)) && typeof value !== 'number')
    return bad('a number')
  return []
}

const SCALARS = new Set([
  'string',
  'bytes',
  'bool',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
  'double',
  'float',
])
const PACKABLE = new Set([...SCALARS].filter((s) => s !== 'string' && s !== 'bytes'))

class Reader {
  pos = 0
  readonly view: DataView
  constructor(readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  }
  varint(): bigint {
    let result = 0n
    let shift = 0n
    for (;;) {
      const b = this.buf[this.pos++]!
      result |= BigInt(b & 0x7f) << shift
      if (!(b & 0x80)) return result
      shift += 7n
    }
  }
  bytes(): Uint8Array {
    const n = Number(this.varint())
    const out = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return out
  }
  skip(wire: number) {
    if (wire === 0) this.varint()
    else if (wire === 1) this.pos += 8
    else if (wire === 2) this.bytes()
    else if (wire === 5) this.pos += 4
    else throw new Error(`wire type ${wire}`)
  }
  scalar(type: string, wire: number): unknown {
    switch (type) {
      case 'string':
        return Buffer.from(this.bytes()).toString('utf8')
      case 'bytes':
        return Buffer.from(this.bytes()).toString('hex')
      case 'bool':
        return this.varint() !== 0n
      case 'int32':
      case 'uint32':
        return Number(BigInt.asIntN(32, this.varint()))
      case 'int64':
        return BigInt.asIntN(64, this.varint()).toString()
      case 'uint64':
        return this.varint().toString()
      case 'sint32':
      case 'sint64': {
        const v = this.varint()
        return ((v >> 1n) ^ -(v & 1n)).toString()
      }
      case 'fixed64':
      case 'sfixed64': {
        const v =
          type === 'fixed64'
            ? this.view.getBigUint64(this.pos, true)
            : this.view.getBigInt64(this.pos, true)
        this.pos += 8
        return v.toString()
      }
      case 'double': {
        const v = this.view.getFloat64(this.pos, true)
        this.pos += 8
        return v
      }
      case 'fixed32':
      case 'sfixed32':
      case 'float': {
        const v =
          type === 'float'
            ? this.view.getFloat32(this.pos, true)
            : type === 'fixed32'
              ? this.view.getUint32(this.pos, true)
              : this.view.getInt32(this.pos, true)
        this.pos += 4
        return v
      }
    }
    throw new Error(`scalar ${type} on wire ${wire}`)
  }
  packed(type: string): unknown[] {
    const end = Number(this.varint()) + this.pos
    const out: unknown[] = []
    const wire =
      type === 'double' || type.endsWith('fixed64')
        ? 1
        : type === 'float' || type.endsWith('fixed32')
          ? 5
          : 0
    while (this.pos < end) out.push(this.scalar(type, wire))
    return out
  }
}

export interface Received {
  path: string
  headers: IncomingHttpHeaders
  contentType: string
  /** the decoded request: protobuf decoded with the schema (field names as in the .proto), or the JSON */
  body: Record<string, unknown>
}

const REQUEST_TYPE: Record<string, string> = {
  '/v1/traces': 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
  '/v1/metrics': 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest',
}

/** A loopback OTLP/HTTP receiver: answers 200 to each export and keeps it decoded. */
export async function otlpReceiver(schema = new ProtoSchema()) {
  const received: Received[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks)
      const contentType = String(req.headers['content-type'] ?? '')
      const path = new URL(req.url ?? '/', 'http://x').pathname
      try {
        const body = contentType.includes('json')
          ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>)
          : schema.decode(REQUEST_TYPE[path]!, raw)
        received.push({ path, headers: req.headers, contentType, body })
        res.writeHead(200, {
          'content-type': contentType.includes('json')
            ? 'application/json'
            : 'application/x-protobuf',
        })
        res.end(contentType.includes('json') ? '{}' : '')
      } catch (err) {
        res.writeHead(400)
        res.end(String(err))
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
