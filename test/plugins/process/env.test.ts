import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  BLOCKED_ENV,
  envNameProblem,
  isBlockedEnv,
  isEssential,
  HIJACK_ENV,
  isHijackEnv,
  isSecretName,
  isSecretValue,
  toolEnv,
} from '../../../plugins/process/api.ts'

const HIJACK = [
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'LD_AUDIT',
  'DYLD_INSERT_LIBRARIES',
  'DYLD_LIBRARY_PATH',
  'DYLD_FRAMEWORK_PATH',
  'DYLD_FALLBACK_LIBRARY_PATH',
  'DYLD_VERSIONED_LIBRARY_PATH',
  'NODE_OPTIONS',
  'PYTHONSTARTUP',
  'PYTHONPATH',
  'PERL5OPT',
  'RUBYOPT',
  'RUBYLIB',
  'JAVA_TOOL_OPTIONS',
  'BASH_ENV',
  'ENV',
  'ZDOTDIR',
]

describe('plugin environment: blocked variables (octos BLOCKED_ENV_VARS)', () => {
  it('has exactly the 18 entries, uppercase', () => {
    assert.equal(BLOCKED_ENV.size, 18)
    assert.deepEqual([...BLOCKED_ENV].sort(), [...HIJACK].sort())
  })

  it('refuses each one whatever its case', () => {
    for (const name of HIJACK) {
      assert.ok(isBlockedEnv(name), name)
      assert.ok(isBlockedEnv(name.toLowerCase()), name.toLowerCase())
      assert.ok(isBlockedEnv(name[0] + name.slice(1).toLowerCase()), `${name} in mixed case`)
    }
    assert.equal(isBlockedEnv('PATH'), false)
    assert.equal(isBlockedEnv('LD_PRELOADX'), false)
  })

  it('folds ASCII case only: a long s (ſ) does not make BAſH_ENV the blocked BASH_ENV', () => {
    assert.equal(isBlockedEnv('BAſH_ENV'), false) // a different variable to the OS: neither blocked nor able to match it
  })
})

describe('plugin environment: secret-like names (substrings, ASCII case-insensitive)', () => {
  it('the names octos let through are secret now: a part anywhere in the name', () => {
    // octos matched whole words only: each of these reached a tool (issue 14)
    for (const name of [
      'PGPASSWORD',
      'MYSQL_PWD',
      'APITOKEN',
      'NPM_CONFIG__AUTH',
      'npm_config__auth',
    ])
      assert.ok(isSecretName(name), name)
  })

  it('each part, anywhere and in any case', () => {
    for (const part of [
      'KEY',
      'TOKEN',
      'SECRET',
      'PASSWORD',
      'PASSWD',
      'PWD',
      'AUTH',
      'CREDENTIAL',
      'PASSCODE',
      'PASSPHRASE',
      'BEARER',
      'COOKIE',
    ]) {
      if (part !== 'PWD') assert.ok(isSecretName(part), part) // bare PWD is the working directory
      assert.ok(isSecretName(`my_${part.toLowerCase()}`), `${part} as a suffix`)
      assert.ok(isSecretName(`X${part}Y`), `${part} inside a word`)
      assert.ok(isSecretName(`${part[0]}${part.slice(1).toLowerCase()}_FILE`), `${part} mixed case`)
    }
    for (const name of [
      'OPENAI_API_KEY',
      'AWS_SECRET_ACCESS_KEY',
      'GITHUB_TOKEN',
      'TOKENIZERS_PARALLELISM', // errs on the safe side: passes when listed
      'KEYBOARD',
      'GIT_AUTHOR_NAME',
    ])
      assert.ok(isSecretName(name), name)
  })

  it('PAT is a whole word (GITHUB_PAT), not the start of PATH; PWD and OLDPWD are directories', () => {
    assert.ok(isSecretName('GITHUB_PAT'))
    assert.ok(isSecretName('pat'))
    for (const name of ['PATH', 'PATTERN_DIR', 'PWD', 'OLDPWD', 'pwd', 'HOME', 'LANG', 'SHELL'])
      assert.equal(isSecretName(name), false, name)
  })

  it('folds ASCII case only: a long s (ſ) does not make PAſSWORD a PASSWORD', () => {
    assert.equal(isSecretName('PAſSWORD'), false) // and it is not an essential, so it never passes unlisted
  })

  it('a value that is a URL with credentials is secret whatever its name', () => {
    for (const value of [
      'postgres://app:hunter2@db.internal:5432/app',
      'https://ghp_abc@github.com/o/r.git',
      'redis://:pw@cache',
    ])
      assert.ok(isSecretValue(value), value)
    for (const value of ['https://github.com/o/r', 'user@example.com', 'mailto:a@b', '/a/b@c'])
      assert.equal(isSecretValue(value), false, value)
  })

  it('the shell hijack variables: a list and the BASH_FUNC_ prefix, any case', () => {
    for (const name of [
      'PS4',
      'ps4',
      'SHELLOPTS',
      'BASHOPTS',
      'PROMPT_COMMAND',
      'GCONV_PATH',
      'BASH_FUNC_ls%%',
    ])
      assert.ok(isHijackEnv(name), name)
    for (const name of ['PATH', 'PS', 'BASH', 'LANG']) assert.equal(isHijackEnv(name), false, name)
    for (const name of HIJACK_ENV) assert.equal(isBlockedEnv(name), false, `${name} may be listed`)
  })
})

describe('plugin environment: env-name validation (octos order)', () => {
  it('each message, in order of precedence', () => {
    assert.equal(envNameProblem(''), 'empty name')
    assert.equal(envNameProblem('A=B'), "name must not contain '='")
    assert.equal(
      envNameProblem('1 = 2'),
      "name must not contain '='",
      "'=' comes before whitespace and the digit",
    )
    assert.equal(envNameProblem('A B'), 'name must not contain whitespace or control characters')
    assert.equal(envNameProblem('A\tB'), 'name must not contain whitespace or control characters')
    assert.equal(
      envNameProblem('A\u0001B'),
      'name must not contain whitespace or control characters',
    )
    assert.equal(
      envNameProblem('1 A'),
      'name must not contain whitespace or control characters',
      'whitespace comes before the digit',
    )
    assert.equal(envNameProblem('1ABC'), 'name must not start with a digit')
    assert.equal(
      envNameProblem('1-A'),
      'name must not start with a digit',
      'the digit comes before the character set',
    )
    assert.equal(envNameProblem('A-B'), 'name must use only [A-Za-z0-9_]')
    assert.equal(envNameProblem('CAFÉ'), 'name must use only [A-Za-z0-9_]')
    assert.equal(envNameProblem('ld_preload'), 'name is a known process-hijack env var')
    assert.equal(envNameProblem('NODE_OPTIONS'), 'name is a known process-hijack env var')
  })

  it('accepts ordinary names, secret ones included', () => {
    for (const name of ['PATH', 'GITHUB_TOKEN', '_X', 'a1', 'SERPER_API_KEY'])
      assert.equal(envNameProblem(name), undefined, name)
  })
})

describe('plugin environment: toolEnv', () => {
  const host = {
    PATH: '/usr/bin',
    HOME: '/home/u',
    GITHUB_TOKEN: 'ghp',
    OPENAI_API_KEY: 'sk',
    PLAIN: 'p',
    LD_PRELOAD: '/evil.so',
    node_options: '--require x',
  }

  it('with no env list a tool gets the essentials only (octos forwarded PLAIN too)', () => {
    assert.deepEqual(toolEnv({ allow: [], from: host }), {
      PATH: '/usr/bin',
      HOME: '/home/u',
    })
  })

  it('with no env list none of the leaks of issue 14 passes: PGPASSWORD, MYSQL_PWD, DATABASE_URL, APITOKEN, NPM_CONFIG__AUTH, PS4', () => {
    const leaky = {
      PATH: '/bin',
      PGPASSWORD: 'pg',
      MYSQL_PWD: 'my',
      DATABASE_URL: 'postgres://app:hunter2@db/app',
      APITOKEN: 'tok',
      NPM_CONFIG__AUTH: 'bnBt',
      PS4: '$(touch /tmp/pwned)',
      SHELLOPTS: 'xtrace',
      'BASH_FUNC_ls%%': '() { echo pwned; }',
    }
    assert.deepEqual(toolEnv({ allow: [], from: leaky }), { PATH: '/bin' })
    const listed = Object.keys(leaky)
    assert.deepEqual(toolEnv({ allow: listed, from: leaky }), leaky, 'each passes when listed')
  })

  it('the essential families (YOKE_*, OCTOS_*, LC_*) drop secret-looking names, credential URLs, hijack names and function values', () => {
    const env = toolEnv({
      allow: [],
      from: {
        YOKE_HOME: '/y',
        YOKE_DB: 'postgres://u:pw@h/db',
        YOKE_MIRROR: 'https://mirror.example/x',
        OCTOS_AUTH_HEADER: 'x',
        LC_ALL: 'C',
        TERM: '() { :; }; echo shellshock',
      },
    })
    assert.deepEqual(env, { YOKE_HOME: '/y', YOKE_MIRROR: 'https://mirror.example/x', LC_ALL: 'C' })
  })

  it("PWD is the process's own directory (cwd), never the host's", () => {
    assert.deepEqual(toolEnv({ allow: [], from: { PWD: '/host/dir', PATH: '/b' }, cwd: '/work' }), {
      PATH: '/b',
      PWD: '/work',
    })
    assert.deepEqual(toolEnv({ allow: [], from: { PWD: '/host/dir' } }), {}, 'not an essential')
  })

  it('execute_does_not_expose_secret_extra_env_without_tool_allowlist', () => {
    const env = toolEnv({
      allow: [],
      from: { PATH: '/bin' },
      extra: { SECRET_TOKEN: 'leak', YOKE_WORK_DIR: '/w' },
    })
    assert.equal(env.SECRET_TOKEN ?? 'missing', 'missing')
    assert.equal(env.YOKE_WORK_DIR, '/w')
  })

  it('a listed secret passes, matched case-insensitively', () => {
    const env = toolEnv({ allow: ['github_token'], from: host })
    assert.deepEqual(env, { PATH: '/usr/bin', HOME: '/home/u', GITHUB_TOKEN: 'ghp' })
  })

  it('strict_env_allowlist_drops_non_listed_extra_env', () => {
    const env = toolEnv({ allow: ['A'], from: {}, extra: { A: 'yes', N: 'no' } })
    assert.equal(`a=${env.A ?? 'missing'};n=${env.N ?? 'missing'}`, 'a=yes;n=missing')
  })

  it('strict_env_allowlist_retains_path, and the other essentials, LC_*, OCTOS_* and YOKE_*', () => {
    const from = {
      PATH: '/bin',
      LANG: 'C.UTF-8',
      TZ: 'UTC',
      LC_PAPER: 'a4',
      OCTOS_SESSION_ID: 's',
      YOKE_HOME: '/y',
      PLAIN: 'p',
      OTHER_TOKEN: 't',
    }
    const env = toolEnv({
      allow: ['LISTED'],
      from: { ...from, LISTED: 'l' },
      extra: { YOKE_WORK_DIR: '/w', OCTOS_WORK_DIR: '/w' },
    })
    assert.deepEqual(env, {
      PATH: '/bin',
      LANG: 'C.UTF-8',
      TZ: 'UTC',
      LC_PAPER: 'a4',
      OCTOS_SESSION_ID: 's',
      YOKE_HOME: '/y',
      LISTED: 'l',
      YOKE_WORK_DIR: '/w',
      OCTOS_WORK_DIR: '/w',
    })
    for (const name of [
      'PATH',
      'Path',
      'LC_ALL',
      'LC_ANYTHING',
      'OCTOS_X',
      'YOKE_X',
      'TERM',
      'TMPDIR',
    ])
      assert.ok(isEssential(name), name)
    for (const name of ['PLAIN', 'EDITOR', 'XOCTOS_X']) assert.equal(isEssential(name), false, name)
  })

  it('a blocked variable never passes, even when listed, from the host or as an extra', () => {
    for (const allow of [[], ['LD_PRELOAD', 'node_options'], ['X']]) {
      const env = toolEnv({
        allow,
        from: host,
        extra: { LD_PRELOAD: '/evil2.so', BASH_ENV: '/x', Ld_Audit: '/y' },
      })
      for (const name of Object.keys(env))
        assert.equal(isBlockedEnv(name), false, `${name} with allow ${JSON.stringify(allow)}`)
    }
  })

  it('extras override the host; undefined host values are skipped; __proto__ stays an own key', () => {
    const env = toolEnv({
      allow: ['PLAIN', 'GONE', '__proto__'],
      from: { PLAIN: 'host', GONE: undefined, ['__proto__']: 'x' },
      extra: { PLAIN: 'extra' },
    })
    assert.equal(env.PLAIN, 'extra')
    assert.equal('GONE' in env, false)
    assert.equal(Object.getPrototypeOf(env), Object.prototype)
  })

  it('reads process.env by default and never mutates it', () => {
    const before = { ...process.env }
    const env = toolEnv({ allow: [] })
    assert.equal(env.PATH, process.env.PATH)
    assert.deepEqual({ ...process.env }, before)
  })
})

describe('plugin environment: the essential families and secrets', () => {
  it('a secret-looking essential (OCTOS_*, YOKE_*, LC_*) still needs listing', () => {
    const env = toolEnv({
      allow: ['MY_SETTING'],
      from: {
        OCTOS_API_KEY: 'x',
        YOKE_GITHUB_TOKEN: 'y',
        LC_SECRET: 'z',
        LC_ALL: 'C',
        OCTOS_WORK_DIR: '/w',
        MY_SETTING: '1',
        PATH: '/bin',
      },
    })
    assert.deepEqual(Object.keys(env).sort(), ['LC_ALL', 'MY_SETTING', 'OCTOS_WORK_DIR', 'PATH'])
  })
})
