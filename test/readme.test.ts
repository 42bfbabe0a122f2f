// The README's commands, checked against the CLI and run as written (issue 16: "the README's quick
// start and every command in it work as written from a fresh clone").
//
// Covered: every command of a ```sh block (and the server command line after an Inspector's `--`),
// every inline code span of the prose that starts with `yoke `, `npx yoke ` or `npm `, every
// synopsis line of the CLI section's table, and the MCP client entry of a ```json block. The
// plugins' own READMEs are not read.
//
// 1. The docs check. A `yoke` command names a command of `yoke --help`, uses only flags its
//    `yoke help COMMAND` lists (or the common ones), each with a value when the flag takes one,
//    and gives no more positional arguments than the usage line allows (a command to type, not a
//    mention of one in prose, no fewer either); then the real parser takes it (`yoke ARGS --help`
//    exits 0 with that command's help). A table line's flags, alternatives and owner are checked
//    the same way. An `npm` command names a script of package.json; an `npx` one a devDependency.
// 2. The commands run, offline and with no keys, in a copy of config/ and examples/ (package.json
//    copied; node_modules, dist and bin linked) with a HOME of its own, so `~/.yoke` is the copy's:
//    npm start's `yoke dev`, the quick start against it, the Inspector CLI lines through sh, each
//    `yoke serve`, the MCP client entry from another directory, the replay run and its transcript,
//    the config edits, `yoke init` in a new project, and every other runnable command (exit 0).
//    `npx yoke ARGS` runs as `node bin/yoke.js ARGS`: in the clone npx resolves `yoke` to the
//    package's own bin (checked below), but it first installs the clone into its cache, which runs
//    `prepare`: a build into the repository's dist/.
//    Not run (docs-checked only; each shows as skipped, with its reason): what needs a model key
//    (`yoke run "…"`, `yoke chat`), `yoke dev --events json` (a second dev in the project), and
//    npm's `install` (network), `test` (this suite), `pack`, `build` and `run bench|soak|lint|format`
//    (test/package.test.ts packs; the others take minutes or write the tree).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import {
  commandOf,
  commandProblems,
  commandWords,
  positionalCount,
  quoted,
  readCli,
  readmeSnippets,
  shellCommands,
  startUntil,
  synopsisProblems,
  usagePositionals,
  yoke,
  yokeArgs,
  type Ran,
  type Snippet,
  type Started,
} from './helpers/readme.ts'
import { ROOT, YOKE } from './helpers/project.ts'
import { until } from './helpers/until.ts'

const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
// the docs check's own yoke home: a user's patch.yaml adds no plugin commands to what it sees
const DOCS_HOME = mkdtempSync(join(tmpdir(), 'yoke-readme-home-'))
const DOCS_ENV = { HOME: DOCS_HOME, YOKE_HOME: join(DOCS_HOME, '.yoke') }
after(() => rmSync(DOCS_HOME, { recursive: true, force: true }))
const cli = await readCli(DOCS_ENV)

/** One command as the README writes it, with every line it is written on. */
interface Written {
  lines: number[]
  /** a synopsis (CLI table, or prose with `a|b` alternatives), or words to run */
  synopsis?: Snippet
  words: string[]
  /** the words after `npx yoke` / `yoke` */
  args?: string[]
  /** written to be typed (a block, or a prose span with its arguments), not a mention */
  complete: boolean
  sources: Set<Snippet['source']>
}

function collect(): Written[] {
  const found = new Map<string, Written>()
  const add = (
    key: string,
    line: number,
    written: Omit<Written, 'lines' | 'sources'>,
    s: Snippet,
  ) => {
    const seen = found.get(key)
    if (seen) {
      seen.lines.push(line)
      seen.complete ||= written.complete
      seen.sources.add(s.source)
    } else found.set(key, { ...written, lines: [line], sources: new Set([s.source]) })
  }
  for (const s of readmeSnippets(README)) {
    if (s.source === 'cli table' || /^(npx )?yoke [^|]*\S\|\S/.test(s.text)) {
      add(`synopsis ${s.text}`, s.line, { synopsis: s, words: [], complete: false }, s)
      continue
    }
    for (const words of shellCommands(s.text)) {
      // the Inspector's `-- node bin/yoke.js serve …`: the server's command line is one too
      const cut = words.indexOf('--')
      const lines =
        words[1] === '@modelcontextprotocol/inspector' && cut > 0
          ? [words, words.slice(cut + 1)]
          : [words]
      for (const words of lines) {
        const args = yokeArgs(words)
        const command = args && commandOf(cli, args)
        // a prose span is a command to type when it gives what the command needs
        const complete =
          s.source !== 'prose' ||
          !command ||
          (positionalCount(cli, args) ?? Infinity) >= command.positionals.min
        const key = args ? `yoke ${JSON.stringify(args)}` : JSON.stringify(words)
        add(key, s.line, { words, args, complete }, s)
      }
    }
  }
  return [...found.values()]
}

const WRITTEN = collect()
const named = (w: Written) =>
  `README:${w.lines[0]}${w.lines.length > 1 ? ` (+${w.lines.length - 1} more)` : ''} ${w.synopsis?.text.split(/ {2,}/)[0] ?? w.words.map(quoted).join(' ')}`
/** npm's own commands, not scripts */
const NPM_OWN = ['install', 'pack', 'ci', 'exec']
/** `yoke <command> --help`: a placeholder where the command's name goes */
const namesNoCommand = (args: string[]) =>
  !commandOf(cli, args) && commandWords(args).some((word) => /^<.*>$/.test(word))

describe(
  "the README's commands name real commands, flags and arguments",
  { concurrency: 8 },
  () => {
    it('npx yoke, in the clone, runs the package’s own bin (bin/yoke.js)', () => {
      // npx runs a local package's bin when the package's name and bin match the command
      assert.equal(PACKAGE.name, 'yoke')
      assert.equal(PACKAGE.bin?.yoke, 'bin/yoke.js')
    })

    for (const w of WRITTEN) {
      if (w.synopsis) {
        const { text, half } = w.synopsis
        it(named(w), () => assert.deepEqual(synopsisProblems(cli, text, half), []))
      } else if (w.args) {
        const args = w.args
        if (namesNoCommand(args)) {
          it(named(w), { skip: 'a placeholder, not a command' }, () => {})
          continue
        }
        it(named(w), async () => {
          assert.deepEqual(commandProblems(cli, args, w.complete), [])
          // the CLI's own parser: the flags are taken, and the words name this command
          const cut = args.indexOf('--')
          const asked =
            cut < 0 ? [...args, '--help'] : [...args.slice(0, cut), '--help', ...args.slice(cut)]
          const help = await yoke(asked, DOCS_ENV)
          assert.equal(help.code, 0, `yoke ${asked.join(' ')}:\n${help.stderr}`)
          const command = commandOf(cli, args)
          assert.ok(
            help.stdout.startsWith(command ? `yoke ${command.name} — ` : 'yoke — '),
            help.stdout.split('\n')[0],
          )
        })
      } else if (w.words[0] === 'npm') {
        it(named(w), () => {
          const [, verb, script] = w.words
          if (NPM_OWN.includes(verb!)) return
          const name = verb === 'run' ? script! : verb!
          assert.ok(PACKAGE.scripts?.[name], `package.json has no "${name}" script`)
        })
      } else if (w.words[0] === 'npx') {
        it(named(w), () => {
          const spec = w.words[1]!
          assert.ok(
            PACKAGE.devDependencies?.[spec],
            `${spec} is not a devDependency: npx would download it`,
          )
        })
      }
      // other programs (`export`, `head`) have nothing to check
    }
  },
)

describe('the docs check fails on what is wrong', () => {
  const problems = (args: string[], complete = true) => commandProblems(cli, args, complete)

  it('a renamed or missing flag, a flag without its value, a wrong command, extra arguments', () => {
    assert.match(problems(['tools', 'call', 'x', '--argz', '{}']).join(), /'--argz'/)
    assert.match(problems(['logs', '--lines']).join(), /--lines/)
    assert.match(problems(['tools', 'lisst']).join(), /"yoke tools lisst" names no command/)
    assert.match(problems(['tools', 'call', 'a', 'b']).join(), /takes 1 positional/)
    assert.match(problems(['tools', 'call']).join(), /takes 1 positional/)
    assert.deepEqual(problems(['tools', 'call'], false), [], 'a mention in prose needs no NAME')
    assert.deepEqual(problems(['tools', 'call', 'note_add', '--args', '{}', '--fresh']), [])
    assert.match(problems(['--bogus']).join(), /'--bogus'/)
  })

  it("a table line's unknown flag, a value where none goes (or none where one does), a wrong owner", () => {
    const table = (line: string, half: 'kernel' | 'plugins' = 'kernel') =>
      synopsisProblems(cli, line, half).join('\n')
    assert.match(table('yoke tools list [--frsh]    x'), /--frsh: no such flag/)
    assert.match(table('yoke logs [--lines]    x'), /--lines takes a value/)
    assert.match(table('yoke inspect [--fresh NOW]    x'), /--fresh takes no value/)
    assert.match(
      table('yoke tools call NAME    x (or --fressh)'),
      /--fressh \(in the description\)/,
    )
    assert.match(table('yoke serve [--stdio]    (skills) x', 'plugins'), /from mcp-server/)
    assert.match(table('yoke serve [--stdio]    x'), /among the kernel's own commands/)
    assert.match(table('yoke skills list|shw NAME    (skills) x', 'plugins'), /"yoke skills shw"/)
    assert.equal(
      table('yoke serve [--stdio|--http H:P] [--view NAME]    (mcp-server) x', 'plugins'),
      '',
    )
  })

  it('reads sh as sh, and usage lines as the CLI prints them', () => {
    assert.deepEqual(
      shellCommands(`npx yoke tools call a --args '{"t":"hi"}' && yoke runs show <id>   # why`),
      [
        ['npx', 'yoke', 'tools', 'call', 'a', '--args', '{"t":"hi"}'],
        ['yoke', 'runs', 'show', '<id>'],
      ],
    )
    assert.deepEqual(shellCommands('i --header "A: B $(cat ~/t)" | head'), [
      ['i', '--header', 'A: B $(cat ~/t)'],
      ['head'],
    ])
    assert.deepEqual(usagePositionals('yoke init [DIR] [--json]', 'init'), { min: 0, max: 1 })
    assert.deepEqual(
      usagePositionals('yoke mcp add NAME [--header "N: v"]… [-- COMMAND [ARGS…]]', 'mcp add'),
      { min: 1, max: Infinity },
    )
    assert.deepEqual(
      readmeSnippets(
        "a `npx yoke tools call x --args\n'{}'` b\n```sh\nyoke a \\\n  --b\n```\n",
      ).map((s) => [s.source, s.line, s.text]),
      [
        ['prose', 1, "npx yoke tools call x --args '{}'"],
        ['sh', 4, 'yoke a   --b'],
      ],
    )
  })
})

/** What `npm start` runs after its build: `node bin/yoke.js ARGS`. */
const START_ARGS = (() => {
  const words = shellCommands(PACKAGE.scripts.start).at(-1)!
  assert.deepEqual(words.slice(0, 2), ['node', 'bin/yoke.js'], PACKAGE.scripts.start)
  return words.slice(2)
})()

const sectionOf = (title: string) => {
  const start = README.indexOf(`\n## ${title}\n`)
  assert.ok(start >= 0, `the README has a "${title}" section`)
  const lineFrom = README.slice(0, start).split('\n').length
  const lineTo =
    lineFrom +
    README.slice(start + 1)
      .split(/\n## /)[0]!
      .split('\n').length
  return WRITTEN.filter((w) => w.lines.some((l) => l > lineFrom && l <= lineTo))
}

/** The README's runnable `yoke` commands whose args (joined) match `pattern`. */
const commands = (pattern: RegExp, from = WRITTEN) =>
  from.filter((w) => w.args && w.complete && pattern.test(w.args.join(' ')))

/** The one README command of `pattern`; failing when the README no longer shows it. */
function theCommand(pattern: RegExp, from = WRITTEN): string[] {
  const [found] = commands(pattern, from)
  assert.ok(found, `the README shows a command matching ${pattern}`)
  return found.args!
}

// who runs what: commands the dedicated tests below run, and those nothing runs (with why)
const DEDICATED: RegExp[] = [
  // npm start's dev, as package.json has it (with --trust): the suite runs it and checks the README
  // shows it. Run again here, a second dev ran until the run's 30 s bound and exited 0 on SIGTERM.
  new RegExp(`^${START_ARGS.join(' ').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$|^dev$`),
  /^tools call /, // the quick start (they change the dev's state)
  /^serve\b/,
  /^run --config examples\/agent-replay\//,
  /^runs\b/, // on the replay's project
  /^mcp (add|remove)\b/, // edits the config, one at a time
  /^init\b/, // in a new project
  /^trust --config /, // the quick start's: run before everything else
  /^trust\b/, // "Project trust": in order, in a project of their own (--revoke would untrust the copy)
  /^(pin|unpin)\b/, // edit the config in order: unpin after pin
  /^doctor$/, // exits 1 in the copy (no model key): its own test below
]
const NOT_RUN: Array<[RegExp, string]> = [
  [/^(run|chat)\b/, 'needs a model key (the replay run is the offline one)'],
  [/^dev --events\b/, 'a second yoke dev in the project; test/dev.test.ts drives --events json'],
]
/** Why the README's npm commands are not run here (npm start is: its dev is the suite's). */
const NPM_NOT_RUN: Record<string, string> = {
  install: 'network (the clone has its node_modules)',
  test: 'the whole suite, this file included',
  pack: 'test/package.test.ts packs the tarball and installs it into a project',
  build: "writes the repository's dist/ (npm test builds before the tests)",
  bench: 'minutes of benchmarks, not an offline check',
  soak: 'the soak suite (about a minute), not part of npm test',
  lint: 'part of npm test',
  format: 'rewrites the tree',
}
/** What the README's placeholders stand for in the copy. */
const FILLED: Record<string, string> = { DIR: 'examples/packages' }
/** The file `yoke mcp import .mcp.json` reads, as a Claude Code project has it. */
const MCP_JSON = {
  mcpServers: { memory: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] } },
}

describe("the README's commands, run offline in a copy of the repository", () => {
  const copy = mkdtempSync(join(tmpdir(), 'yoke-readme-'))
  const home = join(copy, '.user')
  const env: Record<string, string> = {
    HOME: home,
    YOKE_HOME: join(home, '.yoke'),
    YOKE_MCP_PORT: '0',
    OPENAI_API_KEY: '',
    ANTHROPIC_API_KEY: '',
    DEEPSEEK_API_KEY: '',
    NO_COLOR: '1',
    // as a fresh clone sees it: the suite's runner trusts every project, the README's reader does not
    YOKE_TRUST: '',
    // npx finds the Inspector in node_modules; it must never reach the registry
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
  }
  const inCopy = (args: string[]) => yoke(args, env, copy)
  const failed = (r: Ran) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`
  let dev: Started | undefined

  before(async () => {
    for (const dir of ['config', 'examples'])
      cpSync(join(ROOT, dir), join(copy, dir), {
        recursive: true,
        filter: (src) => !/[\\/](\.yoke|node_modules)$/.test(src), // a clone has neither
      })
    copyFileSync(join(ROOT, 'package.json'), join(copy, 'package.json'))
    for (const link of ['node_modules', 'dist', 'bin'])
      symlinkSync(join(ROOT, link), join(copy, link))
    mkdirSync(home)
    writeFileSync(join(copy, '.mcp.json'), JSON.stringify(MCP_JSON, null, 2))
    // the quick start's `yoke trust` lines, as a reader runs them before the other commands
    for (const trust of commands(/^trust --config /, sectionOf('Quick start'))) {
      const ran = await inCopy(trust.args!)
      assert.equal(ran.code, 0, failed(ran))
    }
    dev = await startUntil(
      process.execPath,
      [YOKE, ...START_ARGS],
      { cwd: copy, env },
      / ready in [\d.]+ s · watching for changes/,
    )
  })
  after(async () => {
    await dev?.stop()
    rmSync(copy, { recursive: true, force: true })
  })

  it("npm start runs the README's `yoke dev --config config/yoke.yaml`, ready with the MCP endpoint", () => {
    assert.deepEqual(theCommand(/^dev --config/), START_ARGS)
    const [, url, tokenFile] =
      /^mcp endpoint\n {2}(\S+) · token in (\S+)$/m.exec(dev!.stdout()) ?? []
    assert.match(url ?? '', /^http:\/\/127\.0\.0\.1:\d+\/mcp$/, dev!.stdout())
    assert.equal(tokenFile, join(home, '.yoke', 'mcp-token'))
  })

  it('the quick start: tools list, tools call note_add, then note_list shows the note, inspect', async () => {
    const quick = sectionOf('Quick start')
    const list = await inCopy(theCommand(/^tools list$/, quick))
    assert.equal(list.code, 0, failed(list))
    // the README's example tools, one of each source
    for (const tool of [
      'note_add',
      'skills_list',
      'skill_read',
      'word_count',
      'slugify',
      'disk_free',
    ])
      assert.match(list.stdout, new RegExp(`^${tool} `, 'm'), tool)
    assert.match(list.stdout, /^mcp__workspace__\w+ /m)
    const add = theCommand(/^tools call note_add --args /, quick)
    const called = await inCopy(add)
    assert.equal(called.code, 0, failed(called))
    const text = JSON.parse(add[add.indexOf('--args') + 1]!).text
    const notes = await inCopy(['tools', 'call', 'note_list'])
    assert.equal(notes.code, 0, failed(notes))
    assert.match(notes.stdout, new RegExp(`^1\\. ${text}$`, 'm'), 'the call ran in the dev')
    const inspect = await inCopy(theCommand(/^inspect$/, quick))
    assert.equal(inspect.code, 0, failed(inspect))
    assert.match(inspect.stdout, /^\(live from yoke dev\)$/m)
  })

  describe('the MCP Inspector CLI lines, through sh as written', () => {
    const lines = WRITTEN.filter((w) => w.words[1] === '@modelcontextprotocol/inspector')
    it('the README shows the Inspector CLI', () => assert.ok(lines.length))
    for (const line of lines) {
      it(named(line), async () => {
        // the HTTP one reaches the dev (at its URL); `$(cat ~/.yoke/mcp-token)` reads the copy's token
        const [, url] = /^mcp endpoint\n {2}(\S+)/m.exec(dev!.stdout())!
        const text = readmeText(line).replace(/http:\/\/127\.0\.0\.1:\d+\/mcp/, url!)
        const run = await sh(text, { cwd: copy, env })
        assert.equal(run.code, 0, failed(run))
        const names = JSON.parse(run.stdout).tools.map((t: { name: string }) => t.name)
        for (const tool of ['note_add', 'word_count', 'mcp__workspace__list_files'])
          assert.ok(names.includes(tool), `${tool} in ${names.join(', ')}`)
      })
    }
  })

  it('yoke doctor, with no model key: exit 1, naming what waits and the variable to set', async () => {
    const run = await inCopy(['doctor'])
    assert.equal(run.code, 1, failed(run))
    assert.match(run.stdout + run.stderr, /OPENAI_API_KEY/)
  })

  describe('every other runnable command exits 0', { concurrency: 4 }, () => {
    for (const w of WRITTEN.filter((w) => w.words[0] === 'npm')) {
      const [, verb, script] = w.words
      const reason = NPM_NOT_RUN[verb === 'run' ? script! : verb!]
      if (reason) it(named(w), { skip: reason }, () => {})
    }
    for (const w of WRITTEN) {
      const args = w.args
      if (!args || !w.complete || namesNoCommand(args)) continue
      const joined = args.join(' ')
      if (DEDICATED.some((p) => p.test(joined))) continue
      const reason = NOT_RUN.find(([p]) => p.test(joined))?.[1]
      const filled = args.filter((a) => !/^\[.*\]$/.test(a)).map((a) => FILLED[a] ?? a)
      const left = filled.find((a) => /^[A-Z][A-Z_]+$|…|^<.*>$/.test(a))
      const skip = reason ?? (left ? `a placeholder the copy cannot fill: ${left}` : undefined)
      it(`README:${w.lines[0]} yoke ${filled.join(' ')}`, { skip }, async () => {
        const run = await inCopy(filled)
        assert.equal(run.code, 0, failed(run))
      })
    }
  })

  it('the pin commands, in order: pin, the list shows it holding, unpin', async () => {
    const written = commands(/^(pin|unpin)\b/)
    assert.deepEqual(
      written.map((w) => w.args![0]),
      ['pin', 'pin', 'unpin'],
      'the README shows pin, pin --list, unpin',
    )
    for (const { args } of written) {
      const ran = await inCopy(args!)
      assert.equal(ran.code, 0, failed(ran))
      if (args!.includes('--list')) assert.match(ran.stdout, /skills_list/, ran.stdout)
    }
    const after = await inCopy(['pin', '--list', '--config', 'config/yoke.yaml'])
    assert.equal(after.code, 0, failed(after))
    assert.doesNotMatch(after.stdout, /skills_list/, 'unpin removed it')
  })

  it('the "Project trust" commands, in order, in a fresh project with a local plugin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'yoke-readme-trust-'))
    try {
      writeFileSync(join(dir, 'yoke.config.yaml'), 'plugins:\n  mine:\n    use: ./mine.mjs\n')
      writeFileSync(join(dir, 'mine.mjs'), "export default { name: 'mine', apply() {} }\n")
      const written = commands(/^trust\b/, sectionOf('Project trust'))
      assert.ok(
        written.some((w) => w.args!.includes('--revoke')),
        'the section shows --revoke',
      )
      for (const { args } of written) {
        const ran = await yoke(args!, env, dir)
        assert.equal(ran.code, 0, failed(ran))
      }
      // the block ends with --revoke: the project is asked about again
      const shown = await yoke(['trust', '--show', '--json'], env, dir)
      assert.equal(JSON.parse(shown.stdout).state, 'new', failed(shown))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  // config/yoke.yaml before and after the README's config edits (an add, then its remove)
  const edited: { before?: string; after?: string } = {}
  it('yoke mcp add NAME -- node server.js adds an entry that the running dev connects; mcp remove takes it out', async () => {
    const file = join(copy, 'config/yoke.yaml')
    edited.before = readFileSync(file, 'utf8')
    const adds = commands(/^mcp add \S+ /)
    assert.ok(adds.length, 'the README shows yoke mcp add')
    for (const { args } of adds) {
      const added = await inCopy(args!)
      assert.equal(added.code, 0, failed(added))
      const name = args![2]!
      assert.match(readFileSync(file, 'utf8'), new RegExp(`serverName: ${name}$`, 'm'))
      let listed: Ran | undefined
      await until(
        () => `yoke mcp list to show ${name}: ${listed && failed(listed)}`,
        async () =>
          new RegExp(`^${name} `, 'm').test((listed = await inCopy(['mcp', 'list'])).stdout),
      )
      const removed = await inCopy(['mcp', 'remove', name])
      assert.equal(removed.code, 0, failed(removed))
      assert.doesNotMatch(readFileSync(file, 'utf8'), new RegExp(`serverName: ${name}$`, 'm'))
    }
    edited.after = readFileSync(file, 'utf8')
  })

  it('after mcp add and mcp remove, config/yoke.yaml is as it was ("comments and layout stay")', () => {
    assert.ok(edited.before && edited.after, 'the edits ran')
    assert.equal(edited.after, edited.before)
  })

  it('the replay run answers offline; runs list and runs show <id> read its transcript', async () => {
    const replay = theCommand(/^run --config examples\/agent-replay\/yoke\.yaml /)
    const run = await inCopy(replay)
    assert.equal(run.code, 0, failed(run))
    assert.match(run.stdout, /Friday/)
    assert.match(run.stderr, /note_add/)
    const list = theCommand(/^runs list$/)
    const asWritten = await inCopy(list) // in the repository: config/'s project, no runs there
    assert.equal(asWritten.code, 0, failed(asWritten))
    // on the replay's project, as after `npx yoke run` in one project
    const project = ['--config', 'examples/agent-replay/yoke.yaml']
    const listed = await inCopy([...list, ...project])
    assert.equal(listed.code, 0, failed(listed))
    const id = /^(\S+) +done /m.exec(listed.stdout)?.[1]
    assert.ok(id, listed.stdout)
    const show = theCommand(/^runs show <id>$/).map((a) => (a === '<id>' ? id : a))
    const shown = await inCopy([...show, ...project])
    assert.equal(shown.code, 0, failed(shown))
    assert.match(shown.stdout, /note_add/)
  })

  describe('yoke serve, as the README runs it', { concurrency: 3 }, () => {
    for (const w of commands(/^serve\b/).filter((w) => !w.args!.includes('--cwd'))) {
      const args = w.args!
      it(`yoke ${args.join(' ')}`, async () => {
        const tools = args.includes('--stdio') ? await stdioTools(args) : await httpTools(args)
        const view = args[args.indexOf('--view') + 1]
        if (args.includes('--view') && view === 'readonly') {
          assert.ok(tools.includes('note_list') && !tools.includes('note_add'), tools.join(', '))
        } else assert.ok(tools.includes('note_add'), tools.join(', '))
      })
    }
  })

  it("the MCP client entry (node …/bin/yoke.js serve --stdio --cwd DIR) serves the project from a client's own directory", async () => {
    const [entry] = WRITTEN.filter((w) => w.sources.has('json') && w.args?.[0] === 'serve')
    assert.ok(entry, 'the README shows an MCP client entry that runs yoke serve')
    // its paths stand for this machine's node, this clone and the project
    const [command, ...args] = entry.words.map((word, i) =>
      i === 0 && /(^|\/)node$/.test(word)
        ? process.execPath
        : word
            .replace(/^\/path\/to\/yoke(?=\/)/, ROOT.replace(/\/$/, ''))
            .replace(/^\/path\/to\/project$/, copy),
    )
    const elsewhere = mkdtempSync(join(tmpdir(), 'yoke-client-'))
    try {
      const tools = await stdioTools(args, command!, elsewhere)
      assert.ok(tools.includes('note_add'), tools.join(', '))
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  })

  it('a new project: yoke init, then yoke tools list there (yoke installed into it)', async () => {
    const [line] = WRITTEN.filter((w) => w.args?.[0] === 'init' && w.sources.has('sh'))
    assert.ok(line, 'the README shows yoke init')
    const text = readmeText(line)
    const app = mkdtempSync(join(tmpdir(), 'yoke-app-'))
    try {
      // what `npm install` of the clone or its tarball leaves: node_modules/yoke
      mkdirSync(join(app, 'node_modules'))
      symlinkSync(ROOT, join(app, 'node_modules', 'yoke'))
      for (const words of shellCommands(text)) {
        const args = yokeArgs(words)
        if (!args) continue
        const run = await yoke(args, env, app)
        assert.equal(run.code, 0, `yoke ${args.join(' ')} in a new project: ${failed(run)}`)
      }
    } finally {
      rmSync(app, { recursive: true, force: true })
    }
  })

  it('the dev stops on Ctrl-C with exit 0', async () => {
    assert.equal(await dev!.stop(), 0, dev!.stderr())
  })

  /** The tools `yoke serve ARGS` (HTTP) offers; `--http H:P` listens on a free port instead. */
  async function httpTools(args: string[]): Promise<string[]> {
    const at = args.indexOf('--http')
    const free = at < 0 ? args : args.map((a, i) => (i === at + 1 ? a.replace(/:\d+$/, ':0') : a))
    const served = await startUntil(
      process.execPath,
      [YOKE, ...free],
      { cwd: copy, env },
      /MCP endpoint (http:\/\/\S+)/,
      'stderr',
    )
    try {
      const token = readFileSync(join(home, '.yoke', 'mcp-token'), 'utf8').trim()
      const client = new Client({ name: 'readme-test', version: '1.0.0' })
      const transport = new StreamableHTTPClientTransport(new URL(served.match[1]!), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      })
      await bounded(client.connect(transport), `yoke ${free.join(' ')}`, served.stderr)
      try {
        return (await client.listTools(undefined, { timeout: 20_000 })).tools.map((t) => t.name)
      } finally {
        await client.close()
      }
    } finally {
      assert.equal(await served.stop(), 0, served.stderr())
    }
  }

  /** The tools `yoke serve ARGS` (stdio) offers, spawned as an MCP client spawns it. */
  async function stdioTools(args: string[], command?: string, cwd = copy): Promise<string[]> {
    const transport = new StdioClientTransport({
      command: command ?? process.execPath,
      args: command ? args : [YOKE, ...args],
      cwd,
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: 'pipe',
    })
    let stderr = ''
    transport.stderr!.on('data', (d) => (stderr += d))
    const client = new Client({ name: 'readme-test', version: '1.0.0' })
    try {
      await bounded(client.connect(transport), `yoke ${args.join(' ')}`, () => stderr)
      return (await client.listTools(undefined, { timeout: 20_000 })).tools.map((t) => t.name)
    } catch (err) {
      throw new Error(
        `${command ?? 'yoke'} ${args.join(' ')} (in ${cwd}): ${(err as Error).message}\n${stderr}`,
        { cause: err },
      )
    } finally {
      await client.close().catch(() => {})
    }
  }
})

/** A snippet's text as written in the README (a sh line with its continuations joined). */
function readmeText(w: Written): string {
  const line = readmeSnippets(README).find((s) => s.line === w.lines[0] && s.source === 'sh')
  assert.ok(line, `README:${w.lines[0]} is a sh line`)
  return line.text
}

function sh(text: string, options: { cwd: string; env: Record<string, string> }): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      'sh',
      ['-c', text],
      { cwd: options.cwd, timeout: 30_000, env: { ...process.env, ...options.env } },
      (err, stdout, stderr) =>
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : null) : 0,
          stdout,
          stderr,
        }),
    )
  })
}

async function bounded<T>(
  work: Promise<T>,
  what: string,
  said: () => string,
  ms = 20_000,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${ms} ms\n${said()}`)),
      ms,
    )
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}
