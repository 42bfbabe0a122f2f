/**
 * Where a project may make yoke write: a path relative to the project that stays inside it. A
 * project's config is not trusted to name a file elsewhere (an absolute path, a `..` step, or a
 * link inside the project that points out of it), since yoke would create and append to it.
 */
import { lstatSync, realpathSync } from 'node:fs'
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path'

/** Whether a config path is absolute or has a `..` step: one a project may not give. */
export const escapesProject = (path: string) =>
  isAbsolute(path) || path.split(/[\\/]/).includes('..')

/** What the config error says of such a path (the key is named by it). */
export const PROJECT_PATH_RULE =
  'must be a path relative to the project, without `..` (yoke creates and appends to it; a project cannot point it elsewhere)'

/**
 * The absolute path of `path` inside `projectDir`; throws (naming `key`, suggesting `example`)
 * when it, or a link on its way, leads out of the project.
 */
export function resolveInside(
  projectDir: string,
  path: string,
  key: string,
  example: string,
): string {
  const file = resolve(projectDir, path)
  const refuse = (where: string) =>
    new Error(
      `${key}: ${path} leads out of the project (${where}); give a path inside ${projectDir}, such as ${example}`,
    )
  if (escapesProject(path)) throw refuse('it is absolute or has a `..` step')
  // the nearest part that exists (a dangling link counts: appending to it would create its target)
  let existing = file
  while (!present(existing) && dirname(existing) !== existing) existing = dirname(existing)
  let real: string
  try {
    real = realpathSync(existing)
  } catch {
    throw refuse(`${existing} is a link to nothing`)
  }
  const rel = relative(realpathSync(projectDir), real)
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) throw refuse(`to ${real}`)
  return file
}

function present(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}
