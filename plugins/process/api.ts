/**
 * The process library every plugin that runs programs shares (exec-tools, shell-hooks,
 * claude-hooks, mcp-client, installs). It is a library, not a plugin: no instance, no state, no
 * index.ts. What it holds: the environment rules every plugin process gets (an allowlist: the
 * essentials and the listed names; blocked variables never, secret-looking ones only when listed),
 * the executable format check (a program this machine runs), and the process runner (a program in
 * a process group of its own, bounded output, the whole group ended).
 */
export {
  BLOCKED_ENV,
  envNameProblem,
  HIJACK_ENV,
  isBlockedEnv,
  isEssential,
  isHijackEnv,
  isSecretName,
  isSecretValue,
  toolEnv,
  type ToolEnvOptions,
} from './env.ts'
export {
  executableFormat,
  formatOf,
  interpreterWarning,
  THIS_HOST,
  type Format,
  type Host,
} from './format.ts'
export {
  progressOf,
  resultOf,
  runExecutable,
  runProcess,
  type ProcessSpec,
  type Ran,
  type RunSpec,
} from './run.ts'
