/** The repository plugin's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('repository', {
  REPOSITORY_SOURCE_INVALID: {
    message: '{where}: {reason}',
    hint: 'Fix the source at that line and define it again; nothing was stored. A module is `export default { name, apply(ctx, config) { … } }` importing only node: modules; a fragment is `plugins: { key: { use: <built-in>, config: … } }`.',
  },
  REPOSITORY_UNKNOWN: {
    message: 'no dynamic plugin {name}{version} in this session',
    hint: 'repository_self lists this session’s dynamic plugins; plugins of other sessions are not visible here.',
  },
  REPOSITORY_REJECTED: {
    message: 'running {id} was not approved: {reason}',
    hint: 'Nothing was applied and the current version is unchanged. Ask the user to approve it when asked, or leave it.',
  },
  REPOSITORY_RUN_FAILED: {
    message: '{id} did not start: {reason}',
    hint: 'The current version is unchanged. Read the diagnostics (repository_self), define a fixed version and run it.',
  },
  REPOSITORY_TOO_MANY_TOOLS: {
    message: '{id} registered more than {max} tools (maxToolsPerPlugin); its worker was ended',
    hint: 'A dynamic plugin may have at most maxToolsPerPlugin tools at once (the repository plugin’s config, default 256): register fewer — one tool that takes the item as an argument rather than one tool per item — or raise the cap.',
  },
  REPOSITORY_INSTANCE_UNKNOWN: {
    message: 'no instance "{instance}" that this session can see',
    hint: 'repository_list lists the instances this session can see (other sessions’ dynamic plugins are left out); use one of their keys.',
  },
  REPOSITORY_NOT_HERE: {
    message: '{tool} is a tool of {id}, which does not run on replica {replica}: {reason}',
    hint: 'The session’s plugin runs on other replicas of this gateway but did not start on this one. repository_self (asked here) shows its diagnostics; run it again (repository_run) to start it here, or call again: the balancer may send the call elsewhere.',
  },
  REPOSITORY_EXPORT_FAILED: {
    message: 'cannot export {name}: {reason}',
    hint: '`yoke repository list` shows the running yoke dev’s dynamic plugins by session (export needs it running); export never writes over a file unless --force.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
