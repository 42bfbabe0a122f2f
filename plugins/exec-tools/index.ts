/**
 * exec-tools: plugin executables (octos's protocol, hardened) from layered package directories.
 * A package is a directory with manifest.json; each runs as a child instance (its tools, prompt
 * files, MCP servers and shell hooks), so an edit to one package, or a replaced executable,
 * restarts that package only. Packages obey the skill filter, like the skills they sit beside.
 * One instance is one ExecTools object (instance.ts); what it loads, decide.ts decides.
 */
import { z } from 'zod'
import { definePlugin } from 'yoke'
import { ExecTools } from './instance.ts'
import './errors.ts'

export type * from './api.ts'

const config = z
  .object({
    /** package directories, highest priority first; default: the skills directories, then $YOKE_HOME/packages */
    dirs: z.array(z.string().min(1)).optional(),
    /** each package's work directory is <workDir>/<id> (relative: to the project) */
    workDir: z.string().min(1).default('.yoke/work'),
    /** a tool that writes more than this to stdout is stopped */
    maxStdoutBytes: z
      .number()
      .int()
      .positive()
      .default(16 * 1024 * 1024),
    watch: z.boolean().default(true),
    /** only packages whose manifest pins the executable's sha256 load; extras-only packages (nothing to pin) are refused */
    requireSigned: z.boolean().default(false),
    /** false: this composition runs without network, so packages with `requires_network: true` are refused */
    network: z.boolean().default(true),
  })
  .strict()

export default definePlugin({
  name: 'exec-tools',
  inject: ['runtime', 'project'],
  provides: ['execTools'],
  // each package runs its MCP servers and its shell hooks as children of its own (package.ts)
  uses: ['mcp-client', 'shell-hooks'],
  config,
  runsProjectCode: true, // its packages' executables: from a project's config, after `yoke trust`
  async apply(ctx, cfg) {
    const execTools = new ExecTools(ctx, cfg)
    ctx.effect('exec-tools', () => execTools.close())
    ctx.provide('execTools', execTools.service())
    // the skill filter decides which packages load: follow its provider's comings and goings
    ctx.tap(ctx.hooks.state, `${ctx.key}: skill filter`, (fiber) => execTools.followFilter(fiber))
    await execTools.start()
  },
})
