/**
 * @module repository/references
 * What the model reads about one dynamic plugin: its versions with their ids and hashes, its state,
 * the source of one version, its diagnostics and how to change it. repository_self returns it, and a
 * user prompt that mentions `@<name>` gets it appended (the agent loop's userPrompt hook), so the
 * model can inspect, define and run a new version from its next step.
 */
import type { DynamicPluginInfo } from './api.ts'

/** `@name` mentions in a text (not inside a word or an e-mail address). */
export function mentions(text: string): string[] {
  return [...new Set([...text.matchAll(/(?<![\w@.])@([a-z][a-z0-9-]{0,31})\b/g)].map((m) => m[1]!))]
}

/**
 * Who stopped a stopped plugin, and why: `by capabilities: repo:weather@1 was withdrawn`, so the
 * model learns why its tools went away ('' unless it is stopped).
 */
export function stoppedBy(info: DynamicPluginInfo): string {
  const stop = info.state === 'stopped' ? info.lastStop : undefined
  return stop ? ` by ${stop.by}${stop.why ? `: ${stop.why}` : ''}` : ''
}

/** A plugin's context; its source is the one of `version` (default: the current one, else the latest). */
export function describePlugin(info: DynamicPluginInfo, version?: number): string {
  const shown = info.versions[(version ?? info.current ?? info.versions.length) - 1]!
  const state =
    info.state === 'running'
      ? `running version ${info.current}`
      : info.current
        ? `${info.state} (current version ${info.current})${stoppedBy(info)}`
        : info.state
  const lines = [
    `Dynamic plugin ${info.name} (this session's, in memory only): ${info.purpose}`,
    `state: ${state}${info.tools.length ? `; its tools: ${info.tools.join(', ')}` : ''}`,
    `versions: ${info.versions.map((v) => `${v.version} ${v.id} ${v.hash.slice(0, 19)}${v.version === info.current ? ' (current)' : ''}`).join('; ')}`,
  ]
  if (info.lastRun)
    lines.push(
      `last run: version ${info.lastRun.version} ${info.lastRun.outcome}${info.lastRun.reason ? `: ${info.lastRun.reason}` : ''}`,
    )
  if (info.diagnostics.length) lines.push('diagnostics:', ...info.diagnostics.map((d) => `- ${d}`))
  const fence = shown.kind === 'fragment' ? 'yaml' : shown.language === 'typescript' ? 'ts' : 'js'
  lines.push(
    `source of version ${shown.version} (${shown.kind}${shown.kind === 'module' ? `, ${shown.language}` : ''}):`,
    '```' + fence,
    shown.source.replace(/\n$/, ''),
    '```',
  )
  if (shown.kind === 'module' && shown.config && Object.keys(shown.config).length)
    lines.push(`config: ${JSON.stringify(shown.config)}`)
  lines.push(
    `To change it: repository_define {"name":"${info.name}", …} stores version ${info.versions.length + 1}; repository_run {"plugin":"${info.name}","version":N} runs one (mode "update" while one runs; an older N rolls back); repository_stop and repository_undefine stop or remove it.`,
  )
  return lines.join('\n')
}
