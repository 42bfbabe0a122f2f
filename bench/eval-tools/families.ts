/**
 * Where the distractors come from: for each real server, the words that name its vendor (to be
 * swapped in the clone's tool names and descriptions) and the other real vendors that offer the
 * same kind of server. A clone of `github` as `gitea` has GitHub's tools under their names, with
 * Gitea where GitHub was, lightly reworded: the near-duplicate a big installation really has.
 * Past the named vendors, clones get made-up vendor names (see grow.ts).
 */
export interface Vendor {
  /** the server name in yoke (`mcp__<id>__…`) */
  id: string
  /** as written in prose */
  display: string
}

export interface Family {
  /**
   * how the real vendor is written, matched case-insensitively as a whole word (none: a clone's
   * descriptions get its vendor's name appended instead)
   */
  brand: string[]
  siblings: Vendor[]
}

const v = (id: string, display: string): Vendor => ({ id, display })

const GIT_HOSTS = [
  v('gitea', 'Gitea'),
  v('forgejo', 'Forgejo'),
  v('bitbucket', 'Bitbucket'),
  v('gogs', 'Gogs'),
  v('codeberg', 'Codeberg'),
  v('azure-repos', 'Azure Repos'),
  v('sourcehut', 'SourceHut'),
]
const BROWSERS = [
  v('selenium', 'Selenium'),
  v('webdriverio', 'WebdriverIO'),
  v('chrome-devtools', 'Chrome DevTools'),
  v('browserless', 'Browserless'),
  v('steel', 'Steel'),
  v('hyperbrowser', 'Hyperbrowser'),
]
const WEB_SEARCH = [
  v('bing', 'Bing'),
  v('duckduckgo', 'DuckDuckGo'),
  v('kagi', 'Kagi'),
  v('serpapi', 'SerpApi'),
  v('you', 'You.com'),
  v('searxng', 'SearXNG'),
]
const MAILERS = [
  v('sendgrid', 'SendGrid'),
  v('mailgun', 'Mailgun'),
  v('postmark', 'Postmark'),
  v('ses', 'Amazon SES'),
  v('brevo', 'Brevo'),
]
const MAILBOXES = [
  v('outlook', 'Outlook'),
  v('fastmail', 'Fastmail'),
  v('protonmail', 'Proton Mail'),
  v('zoho-mail', 'Zoho Mail'),
  v('yahoo-mail', 'Yahoo Mail'),
]
const CHAT = [
  v('mattermost', 'Mattermost'),
  v('rocketchat', 'Rocket.Chat'),
  v('teams', 'Microsoft Teams'),
  v('zulip', 'Zulip'),
  v('webex', 'Webex'),
]
const TASKS = [
  v('ticktick', 'TickTick'),
  v('microsoft-todo', 'Microsoft To Do'),
  v('things', 'Things'),
  v('any-do', 'Any.do'),
]
const BOARDS = [
  v('asana', 'Asana'),
  v('clickup', 'ClickUp'),
  v('monday', 'monday.com'),
  v('wrike', 'Wrike'),
]
const SQL = [
  v('mysql', 'MySQL'),
  v('mariadb', 'MariaDB'),
  v('cockroachdb', 'CockroachDB'),
  v('sqlserver', 'SQL Server'),
  v('duckdb', 'DuckDB'),
  v('clickhouse', 'ClickHouse'),
  v('snowflake', 'Snowflake'),
]
const FILES = [
  v('sftp', 'SFTP'),
  v('dropbox', 'Dropbox'),
  v('onedrive', 'OneDrive'),
  v('box', 'Box'),
]

export const FAMILIES: Record<string, Family> = {
  github: { brand: ['GitHub'], siblings: GIT_HOSTS },
  gitlab: { brand: ['GitLab'], siblings: GIT_HOSTS },
  git: {
    brand: ['Git'],
    siblings: [v('mercurial', 'Mercurial'), v('sapling', 'Sapling'), v('jujutsu', 'Jujutsu')],
  },
  slack: { brand: ['Slack'], siblings: CHAT },
  discord: {
    brand: ['Discord'],
    siblings: [v('guilded', 'Guilded'), v('revolt', 'Revolt'), ...CHAT],
  },
  gmail: { brand: ['Gmail'], siblings: MAILBOXES },
  resend: { brand: ['Resend'], siblings: MAILERS },
  'google-calendar': {
    brand: ['Google Calendar', 'Google'],
    siblings: [
      v('outlook-calendar', 'Outlook Calendar'),
      v('caldav', 'CalDAV'),
      v('fastmail-calendar', 'Fastmail Calendar'),
    ],
  },
  'google-maps': {
    brand: ['Google Maps', 'Google Places', 'Google'],
    siblings: [
      v('mapbox', 'Mapbox'),
      v('here', 'HERE'),
      v('tomtom', 'TomTom'),
      v('openstreetmap', 'OpenStreetMap'),
    ],
  },
  weather: {
    brand: ['NOAA', 'Open-Meteo'],
    siblings: [
      v('openweather', 'OpenWeather'),
      v('accuweather', 'AccuWeather'),
      v('weatherapi', 'WeatherAPI'),
    ],
  },
  playwright: { brand: ['Playwright'], siblings: BROWSERS },
  'playwright-ea': { brand: ['Playwright'], siblings: BROWSERS },
  puppeteer: { brand: ['Puppeteer'], siblings: BROWSERS },
  browserbase: { brand: ['Browserbase'], siblings: BROWSERS },
  'brave-search': { brand: ['Brave Search', 'Brave'], siblings: WEB_SEARCH },
  tavily: { brand: ['Tavily'], siblings: WEB_SEARCH },
  exa: { brand: ['Exa'], siblings: WEB_SEARCH },
  perplexity: { brand: ['Perplexity'], siblings: WEB_SEARCH },
  firecrawl: {
    brand: ['Firecrawl'],
    siblings: [
      v('scrapingbee', 'ScrapingBee'),
      v('zyte', 'Zyte'),
      v('crawl4ai', 'Crawl4AI'),
      v('jina', 'Jina Reader'),
    ],
  },
  fetch: { brand: [], siblings: [v('web-fetch', 'web fetch'), v('readability', 'Readability')] },
  postgres: { brand: ['PostgreSQL', 'Postgres'], siblings: SQL },
  mongodb: {
    brand: ['MongoDB Atlas', 'MongoDB', 'Atlas'],
    siblings: [
      v('couchbase', 'Couchbase'),
      v('documentdb', 'DocumentDB'),
      v('cosmosdb', 'Cosmos DB'),
      v('firestore', 'Firestore'),
    ],
  },
  elasticsearch: {
    brand: ['Elasticsearch'],
    siblings: [
      v('opensearch', 'OpenSearch'),
      v('solr', 'Solr'),
      v('meilisearch', 'Meilisearch'),
      v('typesense', 'Typesense'),
    ],
  },
  pinecone: {
    brand: ['Pinecone'],
    siblings: [
      v('weaviate', 'Weaviate'),
      v('qdrant', 'Qdrant'),
      v('milvus', 'Milvus'),
      v('chroma', 'Chroma'),
    ],
  },
  kubernetes: {
    brand: ['Kubernetes'],
    siblings: [v('openshift', 'OpenShift'), v('rancher', 'Rancher'), v('k3s', 'K3s')],
  },
  circleci: {
    brand: ['CircleCI'],
    siblings: [
      v('jenkins', 'Jenkins'),
      v('buildkite', 'Buildkite'),
      v('travis', 'Travis CI'),
      v('teamcity', 'TeamCity'),
    ],
  },
  netlify: {
    brand: ['Netlify'],
    siblings: [
      v('vercel', 'Vercel'),
      v('cloudflare-pages', 'Cloudflare Pages'),
      v('render', 'Render'),
      v('fly', 'Fly.io'),
    ],
  },
  sentry: {
    brand: ['Sentry'],
    siblings: [
      v('rollbar', 'Rollbar'),
      v('bugsnag', 'Bugsnag'),
      v('honeybadger', 'Honeybadger'),
      v('raygun', 'Raygun'),
    ],
  },
  launchdarkly: {
    brand: ['LaunchDarkly'],
    siblings: [
      v('unleash', 'Unleash'),
      v('flagsmith', 'Flagsmith'),
      v('statsig', 'Statsig'),
      v('configcat', 'ConfigCat'),
    ],
  },
  hubspot: {
    brand: ['HubSpot'],
    siblings: [
      v('salesforce', 'Salesforce'),
      v('pipedrive', 'Pipedrive'),
      v('zoho-crm', 'Zoho CRM'),
      v('freshsales', 'Freshsales'),
    ],
  },
  xero: {
    brand: ['Xero'],
    siblings: [
      v('quickbooks', 'QuickBooks'),
      v('freshbooks', 'FreshBooks'),
      v('sage', 'Sage'),
      v('zoho-books', 'Zoho Books'),
    ],
  },
  airtable: {
    brand: ['Airtable'],
    siblings: [
      v('baserow', 'Baserow'),
      v('nocodb', 'NocoDB'),
      v('seatable', 'SeaTable'),
      v('smartsheet', 'Smartsheet'),
    ],
  },
  notion: {
    brand: ['Notion'],
    siblings: [
      v('confluence', 'Confluence'),
      v('coda', 'Coda'),
      v('outline', 'Outline'),
      v('slab', 'Slab'),
    ],
  },
  trello: { brand: ['Trello'], siblings: BOARDS },
  todoist: { brand: ['Todoist'], siblings: TASKS },
  jira: {
    brand: ['Jira'],
    siblings: [v('youtrack', 'YouTrack'), v('shortcut', 'Shortcut'), v('redmine', 'Redmine')],
  },
  memory: { brand: [], siblings: [v('mem0', 'Mem0'), v('zep', 'Zep'), v('letta', 'Letta')] },
  filesystem: { brand: [], siblings: FILES },
  'desktop-commander': {
    brand: ['Desktop Commander'],
    siblings: [v('shell-commander', 'Shell Commander'), v('terminal', 'Terminal')],
  },
  figma: { brand: ['Figma'], siblings: [v('penpot', 'Penpot'), v('sketch', 'Sketch')] },
  everart: {
    brand: ['EverArt'],
    siblings: [v('stability', 'Stability'), v('replicate', 'Replicate'), v('ideogram', 'Ideogram')],
  },
  'youtube-transcript': {
    brand: ['YouTube'],
    siblings: [v('vimeo', 'Vimeo'), v('dailymotion', 'Dailymotion')],
  },
  pubmed: {
    brand: ['PubMed Central', 'PubMed', 'NCBI', 'Europe PMC'],
    siblings: [
      v('arxiv', 'arXiv'),
      v('semantic-scholar', 'Semantic Scholar'),
      v('openalex', 'OpenAlex'),
    ],
  },
  context7: { brand: ['Context7'], siblings: [v('devdocs', 'DevDocs'), v('docsrs', 'docs.rs')] },
  'aws-kb': {
    brand: ['AWS Knowledge Base', 'AWS'],
    siblings: [v('azure-search', 'Azure AI Search'), v('vertex-search', 'Vertex AI Search')],
  },
  shopify: {
    brand: ['Shopify', 'shopify.dev'],
    siblings: [v('woocommerce', 'WooCommerce'), v('bigcommerce', 'BigCommerce')],
  },
  'sequential-thinking': { brand: [], siblings: [v('think', 'think')] },
}
