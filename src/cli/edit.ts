/**
 * @module cli/edit
 * Edits to the project config (`yoke mcp add` and every other `cli.editConfig`): comments and
 * layout kept, refused when unsafe, written atomically under a lock. Loaded when an edit is made.
 */
import { accessSync, constants, existsSync, lstatSync, realpathSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import lockfile from 'proper-lockfile'
import writeFileAtomic from 'write-file-atomic'
import { Document, isMap, parseAllDocuments, parseDocument } from 'yaml'
import { parseConfigText, readConfigText } from '../config/yaml.ts'
import { messageOf, YokeError } from '../errors.ts'

const LOCK_WAIT_MS = 15_000

/**
 * Edits one YAML config so that the file cannot be damaged and no concurrent edit is lost: the
 * file is locked first (proper-lockfile: another yoke editing it waits), then read by the
 * defensive reader, and `edit` changes that document: what it is under the lock, so an edit
 * that waited sees every edit made before it (a caller derives what it writes from `doc`, never
 * from a read of its own). The edit is refused when the file may not be written or when its YAML
 * cannot be edited safely (see planEdit); its content is checked once more before the write (an
 * editor that takes no lock and changed it meanwhile fails the command, EDIT_CONFLICT, so no
 * one's lines are lost), and it is replaced atomically (write-file-atomic: a temp file beside
 * it, fsync, rename) with its mode and owner kept, through a symlink to its target.
 * @example
 * // append to a list: read it from the document, under the lock
 * await editYamlFile(file, (doc) => {
 *   const list = (doc.getIn(['plugins', 'x', 'config', 'items']) as YAMLSeq | undefined)?.toJSON() ?? []
 *   doc.setIn(['plugins', 'x', 'config', 'items'], doc.createNode([...list, item]))
 * })
 */
export async function editYamlFile<T>(
  file: string,
  edit: (doc: Document, file: string) => T,
): Promise<{ file: string } & T> {
  const target = writableTarget(file)
  const lock = await lockConfig(target, file)
  try {
    // read through the name the user knows (errors name it); a link leads to the target anyway
    const read = () => (existsSync(target) ? readConfigText(file) : undefined)
    const before = read()
    const { text, result } = planEdit(before ?? '', file, edit)
    if (read() !== before || lock.compromised())
      throw new YokeError('EDIT_CONFLICT', { file }, { file })
    await writeFileAtomic(target, text).catch((err: unknown) => {
      throw new YokeError(
        'EDIT_WRITE_FAILED',
        { file, reason: messageOf(err) },
        { file, cause: err },
      )
    })
    return { file, ...result }
  } finally {
    await lock.release().catch(() => {})
  }
}

/** The file an edit writes (a symlink's target: the link stays); refused when it may not write it. */
function writableTarget(file: string): string {
  const refuse = (reason: string) =>
    new YokeError('CONFIG_NOT_WRITABLE', { file, reason }, { file })
  if (!lstatSync(file, { throwIfNoEntry: false })) return file
  let target: string
  try {
    target = realpathSync(file)
  } catch (err) {
    throw refuse(`it is a link that leads nowhere (${messageOf(err)})`)
  }
  const stat = statSync(target)
  if (!stat.isFile()) return target // the reader says what it is instead
  if ((stat.mode & 0o222) === 0)
    throw refuse(`it is read-only (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')})`)
  try {
    accessSync(target, constants.W_OK)
  } catch {
    throw refuse('this user may not write it')
  }
  const uid = process.getuid?.()
  if (uid !== undefined && uid !== 0 && stat.uid !== uid)
    throw refuse(
      `it belongs to another user (uid ${stat.uid}): a replaced file could not keep that owner`,
    )
  try {
    accessSync(dirname(target), constants.W_OK)
  } catch {
    throw refuse(
      `its directory may not be written (the new text is written beside it, then renamed)`,
    )
  }
  return target
}

/**
 * Applies `edit` to the document and returns the new text, or refuses YAML it cannot edit safely:
 * what the defensive reader refuses (syntax, duplicate keys, unresolved aliases, alias bombs, at
 * file:line), several documents, and any edit whose text would not mean what the same edit means
 * on the file's plain values. That comparison is what catches anchors and aliases: adding to an
 * anchored `plugins:` would also change every alias of it, removing an anchored entry would break
 * the aliases that use it, and an entry that comes in through a merge key (`<<:`) cannot be removed.
 * So `edit` runs twice (on the document, then on the plain copy): it must only change the document.
 */
function planEdit<T>(
  before: string,
  file: string,
  edit: (doc: Document, file: string) => T,
): { text: string; result: T } {
  const unsafe = (reason: string) => new YokeError('CONFIG_EDIT_UNSAFE', { file, reason }, { file })
  const documents = parseAllDocuments(before)
  if (documents.length > 1) throw unsafe(`it holds ${documents.length} YAML documents`)
  const values = parseConfigText(before, file).value
  const options = { merge: true, uniqueKeys: true } as const
  const doc = parseDocument(before, options)
  const unedited = doc.toString(RENDER)
  const plain = new Document(values, { ...options, aliasDuplicateObjects: false })
  let result: T
  try {
    ensurePlugins(doc)
    ensurePlugins(plain)
    result = edit(doc, file)
    edit(plain, file)
  } catch (err) {
    if (err instanceof YokeError) throw err
    throw unsafe(messageOf(err))
  }
  const expected = plain.toJS() ?? {}
  let text: string
  let after: unknown
  try {
    const edited = doc.toString(RENDER) // throws when an alias lost its anchor
    text = asWritten(before, unedited, edited)
    after = parseConfigText(text, file).value
    if (firstDifference(after, expected) !== undefined) {
      text = edited
      after = parseConfigText(text, file).value
    }
  } catch (err) {
    const reason = messageOf(err)
    throw unsafe(
      /alias/i.test(reason)
        ? `the edit would leave an alias without its anchor (${reason})`
        : `the edited text would not read back (${reason})`,
    )
  }
  const where = firstDifference(after, expected)
  if (where !== undefined)
    throw unsafe(
      `the edit would change ${where || 'the document'} in a way the entry alone does not: YAML anchors, aliases or a merge key (<<) share that part`,
    )
  return { text, result }
}

/** Long lines are not folded: a rendering keeps the document's lines one for one. */
const RENDER = { lineWidth: 0 } as const

/**
 * The edit as a change to the text as written. Rendering a document re-spaces what the edit never
 * touched (`[a]` as `[ a ]`); so the lines where the rendering before and after the edit differ
 * are spliced into the original, and every other line stays as the user wrote it. When the
 * rendering does not keep the original's lines one for one, it is the whole rendering.
 */
function asWritten(before: string, unedited: string, edited: string): string {
  const [original, a, b] = [before, unedited, edited].map((text) => text.split('\n')) as [
    string[],
    string[],
    string[],
  ]
  if (a.length !== original.length) return edited
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let end = 0
  while (end < a.length - start && end < b.length - start && a.at(-1 - end) === b.at(-1 - end))
    end++
  return [
    ...original.slice(0, start),
    ...b.slice(start, b.length - end),
    ...original.slice(original.length - end),
  ].join('\n')
}

/** The first path (a.b.0) where two plain values differ ('' for the root); undefined when equal. */
function firstDifference(a: unknown, b: unknown, path: string[] = []): string | undefined {
  if (isDeepStrictEqual(a, b)) return undefined
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const at = firstDifference(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        [...path, key],
      )
      if (at !== undefined) return at
    }
  }
  return path.join('.')
}

/**
 * The edit's lock on `target` (`target.lock`, proper-lockfile's convention): at once when free,
 * else after saying on stderr that it waits, for at most LOCK_WAIT_MS (longer than a crashed
 * holder's lock takes to go stale).
 */
async function lockConfig(target: string, file: string) {
  const lockPath = `${target}.lock`
  let lost: Error | undefined
  const options = {
    realpath: false,
    stale: 10_000,
    onCompromised: (err: Error) => void (lost = err),
  }
  const fail = (err: unknown) =>
    (err as NodeJS.ErrnoException).code === 'ELOCKED'
      ? new YokeError('EDIT_LOCKED', { file, ms: LOCK_WAIT_MS, lock: lockPath }, { file })
      : new YokeError(
          'EDIT_WRITE_FAILED',
          { file, reason: `its lock ${lockPath} could not be taken (${messageOf(err)})` },
          { file, cause: err },
        )
  let release: () => Promise<void>
  try {
    release = await lockfile.lock(target, options)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw fail(err)
    process.stderr.write(`waiting for ${lockPath}: another process is editing ${file}\n`)
    const retries = { retries: LOCK_WAIT_MS / 100, factor: 1, minTimeout: 100, maxTimeout: 100 }
    release = await lockfile.lock(target, { ...options, retries }).catch((e: unknown) => {
      throw fail(e)
    })
  }
  return { release, compromised: () => lost !== undefined }
}

/** `plugins:` as a block mapping, so entries added to it read as the rest of the file. */
function ensurePlugins(doc: Document) {
  const plugins = doc.get('plugins')
  if (!isMap(plugins)) doc.set('plugins', doc.createNode({}))
  else if (plugins.flow && !plugins.items.length) plugins.flow = false
}
