/**
 * @module claude-hooks/files
 * The file events: ConfigChange, put to a settings file's change before it is read (exit 2 or
 * `decision: block` keeps the hooks in force, except a managed file's), and FileChanged, on the
 * files its matchers list (literal names in the project directory), watched while they are listed.
 */
import { homedir } from 'node:os'
import { basename, resolve } from 'node:path'
import type { WatchHandler } from 'yoke'
import type { ClaudeHooks } from './claude-hooks.ts'

/** ConfigChange's source for a settings file yoke reads (undefined: no Claude Code settings file). */
export function configSource(file: string): string | undefined {
  if (/managed-settings(\.d\/.*)?\.json$/.test(file)) return 'policy_settings'
  if (/\.claude\/settings\.local\.json$/.test(file)) return 'local_settings'
  if (/\.claude\/settings\.json$/.test(file))
    return file.startsWith(resolve(homedir(), '.claude')) ? 'user_settings' : 'project_settings'
  return undefined
}

/** Whether ConfigChange hooks keep `file`'s hooks as they were (a block, logged); fires them first. */
export async function configChangeBlocks(hooks: ClaudeHooks, file: string): Promise<boolean> {
  const source = configSource(file)
  if (!source || !hooks.has('ConfigChange')) return false
  const replies = await hooks.fire('ConfigChange', [source], {
    ...hooks.sessionInput(),
    source,
    file_path: file,
  })
  const blocked = replies.some(
    ({ reply }) =>
      reply.kind === 'block' || (reply.kind === 'ok' && reply.json?.decision === 'block'),
  )
  if (!blocked || source === 'policy_settings') return false
  hooks.logger.info(
    `${hooks.prefix}a ConfigChange hook blocked the change of ${file}; its hooks stay as they were`,
  )
  return true
}

type Watch = (paths: string[], handler: WatchHandler) => (() => unknown) | void

/** FileChanged: the files the matchers list are watched; a change fires it with the file's name. */
export class FileEvents {
  /** the names watched now, and how to stop */
  #watched: { names: string; stop?: (() => unknown) | void } = { names: '' }

  constructor(
    private readonly hooks: ClaudeHooks,
    private readonly watcher: Watch,
  ) {}

  /** Watches what the FileChanged matchers list now (nothing changes when the list is the same). */
  watch(): void {
    const names = [
      ...new Set(
        this.hooks
          .entries()
          .filter((e) => e.event === 'FileChanged' && e.matcher)
          .flatMap((e) => e.matcher!.split('|').map((n) => n.trim()))
          .filter(Boolean),
      ),
    ].sort()
    if (names.join('|') === this.#watched.names) return
    void this.#watched.stop?.()
    const paths = names.map((n) => resolve(this.hooks.projectDir, n))
    this.#watched = {
      names: names.join('|'),
      stop: paths.length
        ? this.watcher(paths, (changes) => {
            for (const c of changes)
              if (c.event === 'add' || c.event === 'change' || c.event === 'unlink')
                void this.hooks.fire('FileChanged', [basename(c.path)], {
                  ...this.hooks.sessionInput(),
                  file_path: resolve(c.path),
                  event: c.event,
                })
          })
        : undefined,
    }
  }

  close(): void {
    void this.#watched.stop?.()
    this.#watched = { names: '' }
  }
}
