/**
 * The real MCP servers the corpus comes from, as dump.ts spawns them: the yoke server name each
 * gets (the middle of `mcp__<server>__<tool>`), the npm package, and what it needs to list its
 * tools offline (a dummy key: none of them is called, only listed).
 */
export interface ServerSource {
  server: string
  package: string
  /** which bin of the package (default: the first) */
  bin?: string
  /** a script inside the package instead of a bin */
  script?: string
  args?: string[]
  /** `{home}` in a value (or an arg) is the dump's scratch home directory */
  env?: Record<string, string>
  /** files written under that home first (dummy credentials some servers read at start) */
  files?: Record<string, string>
}

const KEY = 'eval-dummy-key-0000000000000000'
const OAUTH_KEYS = JSON.stringify({
  installed: {
    client_id: 'eval.apps.example',
    client_secret: KEY,
    redirect_uris: ['http://127.0.0.1'],
  },
})

export const SERVERS: ServerSource[] = [
  // the devDependencies
  { server: 'everything', package: '@modelcontextprotocol/server-everything', args: ['stdio'] },
  { server: 'filesystem', package: '@modelcontextprotocol/server-filesystem', args: ['.'] },
  { server: 'memory', package: '@modelcontextprotocol/server-memory' },
  // from the npm registry
  { server: 'playwright', package: '@playwright/mcp' },
  {
    server: 'github',
    package: '@modelcontextprotocol/server-github',
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: KEY },
  },
  {
    server: 'gitlab',
    package: '@modelcontextprotocol/server-gitlab',
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: KEY },
  },
  {
    server: 'slack',
    package: '@modelcontextprotocol/server-slack',
    env: { SLACK_BOT_TOKEN: KEY, SLACK_TEAM_ID: 'T000' },
  },
  { server: 'puppeteer', package: '@modelcontextprotocol/server-puppeteer' },
  {
    server: 'brave-search',
    package: '@modelcontextprotocol/server-brave-search',
    env: { BRAVE_API_KEY: KEY },
  },
  {
    server: 'postgres',
    package: '@modelcontextprotocol/server-postgres',
    args: ['postgresql://localhost/eval'],
  },
  {
    server: 'google-maps',
    package: '@modelcontextprotocol/server-google-maps',
    env: { GOOGLE_MAPS_API_KEY: KEY },
  },
  { server: 'sequential-thinking', package: '@modelcontextprotocol/server-sequential-thinking' },
  {
    server: 'aws-kb',
    package: '@modelcontextprotocol/server-aws-kb-retrieval',
    env: { AWS_ACCESS_KEY_ID: KEY, AWS_SECRET_ACCESS_KEY: KEY, AWS_REGION: 'us-east-1' },
  },
  {
    server: 'everart',
    package: '@modelcontextprotocol/server-everart',
    env: { EVERART_API_KEY: KEY },
  },
  { server: 'notion', package: '@notionhq/notion-mcp-server', env: { NOTION_TOKEN: KEY } },
  { server: 'context7', package: '@upstash/context7-mcp' },
  { server: 'kubernetes', package: 'mcp-server-kubernetes' },
  { server: 'firecrawl', package: 'firecrawl-mcp', env: { FIRECRAWL_API_KEY: KEY } },
  { server: 'tavily', package: 'tavily-mcp', env: { TAVILY_API_KEY: KEY } },
  { server: 'sentry', package: '@sentry/mcp-server', args: [`--access-token=${KEY}`] },
  { server: 'hubspot', package: '@hubspot/mcp-server', env: { PRIVATE_APP_ACCESS_TOKEN: KEY } },
  {
    server: 'browserbase',
    package: '@browserbasehq/mcp-server-browserbase',
    env: { BROWSERBASE_API_KEY: KEY, BROWSERBASE_PROJECT_ID: 'p' },
  },
  { server: 'desktop-commander', package: '@wonderwhy-er/desktop-commander' },
  { server: 'git', package: '@cyanheads/git-mcp-server' },
  { server: 'circleci', package: '@circleci/mcp-server-circleci', env: { CIRCLECI_TOKEN: KEY } },
  {
    server: 'elasticsearch',
    package: '@elastic/mcp-server-elasticsearch',
    env: { ES_URL: 'http://127.0.0.1:9200', ES_API_KEY: KEY },
  },
  { server: 'perplexity', package: '@perplexity-ai/mcp-server', env: { PERPLEXITY_API_KEY: KEY } },
  { server: 'exa', package: 'exa-mcp-server', env: { EXA_API_KEY: KEY } },
  { server: 'youtube-transcript', package: '@kimtaeyoon83/mcp-server-youtube-transcript' },
  { server: 'todoist', package: 'todoist-mcp', env: { API_KEY: KEY, TODOIST_API_KEY: KEY } },
  {
    server: 'launchdarkly',
    package: '@launchdarkly/mcp-server',
    args: ['start', '--api-key', KEY],
  },
  { server: 'netlify', package: '@netlify/mcp' },
  { server: 'playwright-ea', package: '@executeautomation/playwright-mcp-server' },
  { server: 'pinecone', package: '@pinecone-database/mcp', env: { PINECONE_API_KEY: KEY } },
  { server: 'figma', package: 'figma-developer-mcp', args: ['--stdio', `--figma-api-key=${KEY}`] },
  {
    server: 'xero',
    package: '@xeroapi/xero-mcp-server',
    env: { XERO_CLIENT_ID: KEY, XERO_CLIENT_SECRET: KEY },
  },
  { server: 'airtable', package: 'airtable-mcp-server', env: { AIRTABLE_API_KEY: KEY } },
  { server: 'mongodb', package: '@mongodb-js/mongodb-mcp-server' },
  { server: 'shopify', package: '@shopify/dev-mcp' },
  {
    server: 'gmail',
    package: '@gongrzhe/server-gmail-autoauth-mcp',
    files: {
      '.gmail-mcp/gcp-oauth.keys.json': OAUTH_KEYS,
      '.gmail-mcp/credentials.json': JSON.stringify({ access_token: KEY, refresh_token: KEY }),
    },
  },
  {
    server: 'google-calendar',
    package: '@cocal/google-calendar-mcp',
    env: { GOOGLE_OAUTH_CREDENTIALS: '{home}/gcp-oauth.keys.json' },
    files: { 'gcp-oauth.keys.json': OAUTH_KEYS },
  },
  {
    server: 'jira',
    package: '@aashari/mcp-server-atlassian-jira',
    env: {
      ATLASSIAN_SITE_NAME: 'eval',
      ATLASSIAN_USER_EMAIL: 'eval@example.com',
      ATLASSIAN_API_TOKEN: KEY,
    },
  },
  { server: 'weather', package: '@dangahagan/weather-mcp' },
  { server: 'discord', package: 'mcp-discord', env: { DISCORD_TOKEN: KEY } },
  { server: 'resend', package: 'resend-mcp', env: { RESEND_API_KEY: KEY } },
  { server: 'fetch', package: '@kazuph/mcp-fetch' },
  { server: 'pubmed', package: '@cyanheads/pubmed-mcp-server' },
  {
    server: 'trello',
    package: '@delorenj/mcp-server-trello',
    env: { TRELLO_API_KEY: KEY, TRELLO_TOKEN: KEY },
  },
  // added 2026-12-05 (issue 32: more real servers, other kinds of work)
  { server: 'airbnb', package: '@openbnb/mcp-server-airbnb' },
  { server: 'chart', package: '@antv/mcp-server-chart' },
  { server: 'asana', package: '@roychri/mcp-server-asana', env: { ASANA_ACCESS_TOKEN: KEY } },
  { server: 'selenium', package: '@angiejones/mcp-selenium' },
  { server: 'chrome-devtools', package: 'chrome-devtools-mcp' },
  { server: 'mapbox', package: '@mapbox/mcp-server', env: { MAPBOX_ACCESS_TOKEN: KEY } },
  { server: 'obsidian', package: 'mcp-obsidian', args: ['{home}'] },
  { server: 'deepl', package: 'deepl-mcp-server', env: { DEEPL_API_KEY: KEY } },
  {
    server: 'line',
    package: '@line/line-bot-mcp-server',
    env: { CHANNEL_ACCESS_TOKEN: KEY, DESTINATION_USER_ID: 'U0' },
  },
]
