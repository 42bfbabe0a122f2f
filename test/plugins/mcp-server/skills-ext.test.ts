// `yoke serve` offers the composition's skills through the MCP Skills extension (SEP-2640), read
// back over real HTTP by the SDK's own client (SkillsClient: every file verified against its
// entry), in both eras: the project's skills and an MCP server's (bridged by mcp-client, re-served
// as skill://<server>/<skill>/…); a skill the SDK's rules refuse is left out and said; a view
// without skills does not declare the extension; a skill added on disk reaches a connected client.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills'
import { tempProject, type Project } from '../../helpers/project.ts'
import { serveHttp } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const SERVER = new URL('../mcp-client/skills-server.mjs', import.meta.url).pathname
const md = (name: string, description: string, body = `Do ${name}.\n`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}`
const CONFIG = `preset: base
plugins:
  skills:
    config: { dirs: [./skills] }
  docs:
    use: mcp-client
    config: { serverName: docs, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(SERVER)}, dir, ./remote] }
  gateway:
    use: mcp-server
    config:
      views:
        bare: { skills: false }
`

describe('yoke serve: the skills extension, read by the SDK client over HTTP', () => {
  let project: Project
  let child: ChildProcess
  let url: string
  let views: Record<string, string>
  let stderr = () => ''
  before(async () => {
    project = tempProject({
      'yoke.config.yaml': CONFIG,
      'skills/commit/SKILL.md': md('commit', 'Write a commit message.'),
      'skills/commit/references/style.md': '# Style\nimperative mood\n',
      'skills/commit/scripts/check.sh': '#!/bin/sh\necho ok\n',
      'skills/bom/SKILL.md': `\uFEFF${md('bom', 'A SKILL.md that starts with a byte-order mark.')}`,
      'skills/Loud/SKILL.md': md('Loud', 'A name the spec refuses (uppercase).'),
      // YAML refuses it (yoke reads it leniently, a violation); the SDK's parser refuses it too
      'skills/colon/SKILL.md': '---\nname: colon\ndescription: use it when: asked\n---\nx\n',
      'remote/pdf/SKILL.md': md('pdf', 'Fill in PDF forms.', 'Read FORMS.md first.\n'),
      'remote/pdf/FORMS.md': '# Forms\n',
    })
    const served = await serveHttp(project, 60_000)
    ;({ child, stderr } = served)
    ;({ url, views } = served.info)
  })
  after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL')
    project.cleanup()
  })
  const token = () => readFileSync(join(project.home, 'mcp-token'), 'utf8').trim()
  async function connect(at: string, mode: 'legacy' | 'auto') {
    const client = new Client(
      { name: 'skills-test', version: '1' },
      { versionNegotiation: { mode } },
    )
    await client.connect(
      new StreamableHTTPClientTransport(new URL(at), {
        requestInit: { headers: { Authorization: `Bearer ${token()}` } },
      }),
    )
    return client
  }

  for (const mode of ['legacy', 'auto'] as const)
    it(`lists and reads every skill, verified (${mode})`, async () => {
      const client = await connect(url, mode)
      try {
        const skills = new SkillsClient(client)
        assert.ok(skills.supported)
        // the bridged server's skills arrive once it is connected
        let listed: Awaited<ReturnType<SkillsClient['list']>>['skills'] = []
        await until('the bridged skill', async () => {
          listed = (await skills.list()).skills
          return listed.some((s) => s.uri === 'skill://docs/pdf/SKILL.md')
        })
        assert.deepEqual(
          listed.map((s) => s.uri),
          ['skill://bom/SKILL.md', 'skill://commit/SKILL.md', 'skill://docs/pdf/SKILL.md'],
        )
        for (const skill of listed)
          for (const r of skill.resources === 'dynamic' ? [] : skill.resources) {
            const file = await skills.read(skill, r.uri)
            assert.equal(file.verified, true, r.uri)
          }
        const commit = listed.find((s) => s.frontmatter.name === 'commit')!
        assert.equal(
          (await skills.read(commit, 'references/style.md')).text,
          '# Style\nimperative mood\n',
        )
        const pdf = await skills.read(listed.find((s) => s.frontmatter.name === 'pdf')!)
        assert.equal(pdf.body, 'Read FORMS.md first.\n')
        const got = await skills.get('skill://docs/pdf/SKILL.md')
        assert.equal(got.skill.frontmatter.description, 'Fill in PDF forms.')
        await assert.rejects(skills.get('skill://nothing/SKILL.md'), /No skill is served/)
        // the prompts and resources of today stay
        const prompts = (await client.listPrompts()).prompts.map((p) => p.name)
        assert.ok(prompts.includes('commit') && prompts.includes('docs:pdf'), prompts.join())
      } finally {
        await client.close()
      }
    })

  it('says which skill it leaves out, and why', () => {
    assert.match(
      stderr(),
      /skill "Loud" is not offered through the skills extension: .*name "Loud"/,
    )
    assert.match(
      stderr(),
      /skill "colon" is not offered through the skills extension: .*frontmatter/,
    )
  })

  it('a view without skills does not declare the extension', async () => {
    const client = await connect(views.bare!, 'legacy')
    try {
      assert.equal(new SkillsClient(client).supported, false)
    } finally {
      await client.close()
    }
  })

  it('a skill added on disk reaches a connected client (resources/list_changed)', async () => {
    const client = await connect(url, 'legacy')
    let changed = 0
    client.setNotificationHandler('notifications/resources/list_changed', () => void changed++)
    try {
      const skills = new SkillsClient(client)
      mkdirSync(project.path('skills/added'))
      project.writeAtomic('skills/added/SKILL.md', md('added', 'Added while connected.'))
      await until('the new skill', async () =>
        (await skills.list()).skills.some((s) => s.uri === 'skill://added/SKILL.md'),
      )
      await until('resources/list_changed', () => changed > 0)
    } finally {
      await client.close()
    }
  })
})
