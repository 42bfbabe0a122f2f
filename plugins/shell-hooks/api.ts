/**
 * The public face of shell-hooks: the plugin itself (exec-tools runs one as a child instance per
 * package with hooks), the events a hook may name, and the shape of one hook in its config.
 */
export { default as shellHooks, HOOK_EVENTS, type ShellHook } from './index.ts'
