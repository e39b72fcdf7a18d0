// The corpus redaction is measured on: secrets in the forms people paste (issuers' token formats as gitleaks' rules
// describe them, key = value and key: value anywhere in a line, prose, connection strings, PEM blocks, headers), and
// look-alikes that must come through untouched (code, prose about passwords, hashes in git logs, UUIDs, paths).
// Every secret is made here from a seeded generator in its issuer's published shape, so none is real and the corpus
// holds no token-shaped literal; the same seed gives the same corpus on every run.

export interface SecretCase {
  /** The form, for reports: `github ghp_ in prose`, `SECRET_KEY=… mid-line`. */
  name: string;
  text: string;
  /** Pieces of the secret none of which may survive redaction (the whole, and its halves where long enough). */
  pieces: string[];
}

/** mulberry32: a small seeded generator, enough to make fake secrets reproducible. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const next = generator(0x5eed);
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGIT = '0123456789';
const ALNUM = UPPER + LOWER + DIGIT;
const HEX = '0123456789abcdef';
const URLSAFE = ALNUM + '_-';
const B64 = ALNUM + '+/';

/** `n` characters of `set`, with a digit and a letter in it whenever the set has both (as real tokens do). */
function chars(set: string, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += set[Math.floor(next() * set.length)];
  if (n >= 8 && /[0-9]/.test(set) && !/[0-9]/.test(s)) s = s.slice(0, -1) + '7';
  if (n >= 8 && /[a-z]/i.test(set) && !/[a-z]/i.test(s)) s = 'k' + s.slice(1);
  return s;
}

const piecesOf = (secret: string): string[] => (secret.length >= 12 ? [secret, secret.slice(0, secret.length >> 1), secret.slice(secret.length >> 1)] : [secret]);

// Issuers' token shapes (gitleaks' config/gitleaks.toml rules and the issuers' own documentation).
const TOKENS: [string, () => string][] = [
  ['AWS access key id AKIA', () => 'AKIA' + chars(UPPER + DIGIT, 16)],
  ['AWS temporary key id ASIA', () => 'ASIA' + chars(UPPER + DIGIT, 16)],
  ['GitHub classic PAT ghp_', () => 'ghp_' + chars(ALNUM, 36)],
  ['GitHub OAuth gho_', () => 'gho_' + chars(ALNUM, 36)],
  ['GitHub user-to-server ghu_', () => 'ghu_' + chars(ALNUM, 36)],
  ['GitHub server-to-server ghs_', () => 'ghs_' + chars(ALNUM, 36)],
  ['GitHub refresh ghr_', () => 'ghr_' + chars(ALNUM, 36)],
  ['GitHub fine-grained github_pat_', () => 'github_pat_' + chars(ALNUM, 22) + '_' + chars(ALNUM, 59)],
  ['GitLab PAT glpat-', () => 'glpat-' + chars(URLSAFE, 20)],
  ['GitLab pipeline trigger glptt-', () => 'glptt-' + chars(HEX, 40)],
  ['GitLab deploy token gldt-', () => 'gldt-' + chars(URLSAFE, 20)],
  ['GitLab runner glrt-', () => 'glrt-' + chars(URLSAFE, 20)],
  ['Slack bot xoxb-', () => `xoxb-${chars(DIGIT, 12)}-${chars(DIGIT, 13)}-${chars(ALNUM, 24)}`],
  ['Slack user xoxp-', () => `xoxp-${chars(DIGIT, 12)}-${chars(DIGIT, 12)}-${chars(DIGIT, 13)}-${chars(HEX, 32)}`],
  ['Slack app xoxa-', () => `xoxa-2-${chars(DIGIT, 12)}-${chars(ALNUM, 24)}`],
  ['Slack refresh xoxr-', () => `xoxr-${chars(DIGIT, 12)}-${chars(ALNUM, 24)}`],
  ['Slack legacy xoxs-', () => `xoxs-${chars(DIGIT, 12)}-${chars(ALNUM, 24)}`],
  ['Slack app-level xapp-', () => `xapp-1-A${chars(UPPER + DIGIT, 10)}-${chars(DIGIT, 13)}-${chars(HEX, 64)}`],
  ['Stripe live secret sk_live_', () => 'sk_live_' + chars(ALNUM, 24)],
  ['Stripe test secret sk_test_', () => 'sk_test_' + chars(ALNUM, 24)],
  ['Stripe restricted rk_live_', () => 'rk_live_' + chars(ALNUM, 24)],
  ['Stripe webhook secret whsec_', () => 'whsec_' + chars(ALNUM, 32)],
  ['Google API key AIza', () => 'AIza' + chars(URLSAFE, 35)],
  ['Google OAuth client secret GOCSPX-', () => 'GOCSPX-' + chars(URLSAFE, 28)],
  ['Google OAuth access token ya29.', () => 'ya29.' + chars(URLSAFE, 64)],
  ['OpenAI project key sk-proj-', () => 'sk-proj-' + chars(URLSAFE, 48)],
  ['OpenAI legacy key sk-', () => 'sk-' + chars(ALNUM, 20) + 'T3BlbkFJ' + chars(ALNUM, 20)],
  ['OpenAI service account sk-svcacct-', () => 'sk-svcacct-' + chars(URLSAFE, 48)],
  ['OpenRouter sk-or-v1-', () => 'sk-or-v1-' + chars(HEX, 64)],
  ['Anthropic sk-ant-api03-', () => 'sk-ant-api03-' + chars(URLSAFE, 93) + 'AA'],
  ['Anthropic admin sk-ant-admin01-', () => 'sk-ant-admin01-' + chars(URLSAFE, 93) + 'AA'],
  ['npm token npm_', () => 'npm_' + chars(ALNUM, 36)],
  ['PyPI token pypi-', () => 'pypi-AgEIcHlwaS5vcmc' + chars(URLSAFE, 64)],
  ['Hugging Face hf_', () => 'hf_' + chars(ALNUM, 34)],
  ['Hugging Face org api_org_', () => 'api_org_' + chars(ALNUM, 34)],
  ['Twilio API key SK', () => 'SK' + chars(HEX, 32)],
  ['SendGrid SG.', () => `SG.${chars(URLSAFE, 22)}.${chars(URLSAFE, 43)}`],
  ['Mailgun key-', () => 'key-' + chars(HEX, 32)],
  ['Mailchimp -us', () => chars(HEX, 32) + '-us' + chars(DIGIT, 2)],
  ['Shopify access shpat_', () => 'shpat_' + chars(HEX, 32)],
  ['Shopify shared secret shpss_', () => 'shpss_' + chars(HEX, 32)],
  ['Shopify custom app shpca_', () => 'shpca_' + chars(HEX, 32)],
  ['DigitalOcean PAT dop_v1_', () => 'dop_v1_' + chars(HEX, 64)],
  ['DigitalOcean OAuth doo_v1_', () => 'doo_v1_' + chars(HEX, 64)],
  ['Databricks dapi', () => 'dapi' + chars(HEX, 32)],
  ['HashiCorp Vault service hvs.', () => 'hvs.' + chars(URLSAFE, 90)],
  ['HashiCorp Vault batch hvb.', () => 'hvb.' + chars(URLSAFE, 138)],
  ['Terraform Cloud .atlasv1.', () => `${chars(LOWER + DIGIT, 14)}.atlasv1.${chars(LOWER + DIGIT, 67)}`],
  ['Doppler dp.pt.', () => 'dp.pt.' + chars(LOWER + DIGIT, 43)],
  ['Pulumi pul-', () => 'pul-' + chars(HEX, 40)],
  ['Linear lin_api_', () => 'lin_api_' + chars(LOWER + DIGIT, 40)],
  ['Notion ntn_', () => 'ntn_' + chars(ALNUM, 46)],
  ['Figma figd_', () => 'figd_' + chars(URLSAFE, 40)],
  ['Grafana cloud glc_', () => 'glc_' + chars(ALNUM, 32)],
  ['Grafana service account glsa_', () => `glsa_${chars(ALNUM, 32)}_${chars(HEX, 8)}`],
  ['New Relic NRAK-', () => 'NRAK-' + chars(UPPER + DIGIT, 27)],
  ['Sentry sntrys_', () => 'sntrys_' + chars(ALNUM, 64)],
  ['Postman PMAK-', () => `PMAK-${chars(HEX, 24)}-${chars(HEX, 34)}`],
  ['Replicate r8_', () => 'r8_' + chars(ALNUM, 37)],
  ['Groq gsk_', () => 'gsk_' + chars(ALNUM, 52)],
  ['xAI xai-', () => 'xai-' + chars(ALNUM, 80)],
  ['Perplexity pplx-', () => 'pplx-' + chars(ALNUM, 48)],
  ['age secret key', () => 'AGE-SECRET-KEY-1' + chars('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)],
  ['Docker Hub dckr_pat_', () => 'dckr_pat_' + chars(URLSAFE, 27)],
  ['RubyGems rubygems_', () => 'rubygems_' + chars(HEX, 48)],
  ['Supabase sbp_', () => 'sbp_' + chars(HEX, 40)],
  ['Telegram bot token', () => `${chars(DIGIT, 10)}:AA${chars(URLSAFE, 33)}`],
  ['Square access sq0atp-', () => 'sq0atp-' + chars(URLSAFE, 22)],
  ['Square OAuth secret sq0csp-', () => 'sq0csp-' + chars(URLSAFE, 43)],
  ['Alibaba LTAI', () => 'LTAI' + chars(ALNUM, 20)],
  ['PlanetScale pscale_tkn_', () => 'pscale_tkn_' + chars(URLSAFE, 43)],
  ['PlanetScale pscale_pw_', () => 'pscale_pw_' + chars(URLSAFE, 43)],
  ['Dynatrace dt0c01.', () => `dt0c01.${chars(UPPER + DIGIT, 24)}.${chars(UPPER + DIGIT, 64)}`],
  ['Atlassian ATATT3', () => 'ATATT3' + chars(URLSAFE, 186)],
  ['LangSmith lsv2_pt_', () => `lsv2_pt_${chars(HEX, 32)}_${chars(HEX, 10)}`],
  ['Tavily tvly-', () => 'tvly-' + chars(ALNUM, 32)],
  ['Pinecone pcsk_', () => `pcsk_${chars(ALNUM, 6)}_${chars(URLSAFE, 60)}`],
  ['Mapbox secret sk.eyJ', () => `sk.eyJ1Ijoi${chars(ALNUM, 20)}.${chars(URLSAFE, 22)}`],
  ['Sourcegraph sgp_', () => 'sgp_' + chars(HEX, 40)],
  ['Netlify nfp_', () => 'nfp_' + chars(ALNUM, 36)],
  ['Fly.io fo1_', () => 'fo1_' + chars(URLSAFE, 43)],
  ['Buildkite bkua_', () => 'bkua_' + chars(HEX, 40)],
  ['Contentful CFPAT-', () => 'CFPAT-' + chars(URLSAFE, 43)],
  ['Clojars CLOJARS_', () => 'CLOJARS_' + chars(LOWER + DIGIT, 60)],
  ['Airtable pat', () => `pat${chars(ALNUM, 14)}.${chars(HEX, 64)}`],
  ['Cerebras csk-', () => 'csk-' + chars(LOWER + DIGIT, 48)],
  ['Flutterwave FLWSECK-', () => `FLWSECK-${chars(HEX, 32)}-X`],
  ['Shippo shippo_live_', () => 'shippo_live_' + chars(HEX, 40)],
  ['JWT', () => `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ${chars(URLSAFE, 40)}.${chars(URLSAFE, 43)}`],
];

// The places a token is pasted where nothing about its surroundings says "secret": only its shape can.
const PLACES: [string, (t: string) => string][] = [
  ['in prose', (t) => `here is the one I used yesterday ${t} and it still works`],
  ['as a JSON value', (t) => `{"id": 7, "value": "${t}", "ok": true}`],
  ['in backticks', (t) => `try \`${t}\` again`],
  ['at the end of a log line', (t) => `2024-05-01T10:00:00Z INFO using ${t}`],
];

const VALUES = [
  () => 'Tr0ub4dor&3',
  () => 'hunter2isgood',
  () => chars(ALNUM, 16),
  () => chars(ALNUM, 12) + '!#',
  () => chars(B64, 40),
];

// Key names that say the value is a secret, as env files, YAML, INI, code and command lines write them.
const KEYS = [
  'password', 'Password', 'passwd', 'passphrase', 'PGPASSWORD', 'DB_PASSWORD', 'db.password', 'mysql_root_password',
  'secret', 'client_secret', 'SECRET_KEY', 'DJANGO_SECRET_KEY', 'PRIVATE_KEY', 'private-key', 'api_key', 'apiKey', 'API_KEY',
  'access_key', 'aws_secret_access_key', 'AWS_SECRET_ACCESS_KEY', 'auth_token', 'access_token', 'refresh_token', 'token',
  'GITHUB_TOKEN', 'credentials', 'encryption_key', 'signing_key', 'secretKey', 'master_key', 'AccountKey', 'session_secret',
];
const SEPARATORS = ['=', ' = ', ': ', ':'];
const POSITIONS: [string, (kv: string) => string][] = [
  ['alone', (kv) => kv],
  ['mid-line', (kv) => `x ${kv}`],
  ['mid-line, text after', (kv) => `run with ${kv} ok`],
  ['after ; in a command', (kv) => `cd app; ${kv} ./start.sh`],
];

function build(): SecretCase[] {
  const out: SecretCase[] = [];
  const add = (name: string, text: string, pieces: string[]) => out.push({ name, text, pieces });
  for (const [issuer, make] of TOKENS) {
    for (const [where, put] of PLACES) {
      const t = make();
      add(`${issuer} ${where}`, put(t), piecesOf(t));
    }
  }
  KEYS.forEach((key, k) => {
    POSITIONS.forEach(([where, put], p) => {
      const sep = SEPARATORS[(k + p) % SEPARATORS.length]!;
      // `key: value` with text after it is prose-like: only a value that looks like a secret can be told apart there.
      const v = VALUES[(k + p) % VALUES.length]!();
      add(`${key}${sep.trim() || sep}… ${where}`, put(`${key}${sep}${v}`), piecesOf(v));
    });
  });
  // The forms a probe found stored in the clear, word for word.
  add('aws_secret_access_key mid-line', 'x aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', ['wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'bPxRfiCYEXAMPLEKEY']);
  add('password: mid-line', 'my password: Tr0ub4dor&3 ok', ['Tr0ub4dor', '&3']);
  add('SECRET_KEY= in a sentence', 'run with SECRET_KEY=hunter2isgood', ['hunter2isgood']);
  add('PRIVATE_KEY=', 'PRIVATE_KEY=abcdefgh12345678', ['abcdefgh12345678']);
  add('password is …', 'password is hunter2', ['hunter2']);
  add('the tail after &', 'password=Tr0ub4dor&3;', ['Tr0ub4dor', '&3']);
  // Prose that says what a value is.
  for (const [lead, v] of [
    ['my password is', 'Pa55w0rd!2024'],
    ['The password was', 'c0rrect-h0rse'],
    ['the api key is', chars(ALNUM, 24)],
    ['our token is', chars(ALNUM, 20)],
    ['his passphrase is', 'blue-Sky-42-river'],
    ['new password =', 'Winter2024!'],
    ['secret is', 's3cr3t-v4lue'],
    ['the wifi password is', 'g00dW1f1pass'],
  ] as const) {
    add(`"${lead} …"`, `${lead} ${v}, keep it safe`, piecesOf(v));
  }
  // Connection strings and URLs with a password in them.
  const pw = () => chars(ALNUM, 14);
  for (const [name, make] of [
    ['postgres URL', (p: string) => `DATABASE_URL=postgres://app:${p}@db.internal:5432/app`],
    ['mysql URL', (p: string) => `mysql://root:${p}@127.0.0.1:3306/shop`],
    ['mongodb+srv URL', (p: string) => `mongodb+srv://admin:${p}@cluster0.ab1cd.mongodb.net/test?retryWrites=true`],
    ['redis URL, no user', (p: string) => `redis://:${p}@cache:6379/0`],
    ['amqp URL', (p: string) => `amqp://guest:${p}@rabbit:5672/`],
    ['https URL with user', (p: string) => `git clone https://deploy:${p}@git.example.com/team/repo.git`],
    ['ADO.NET Password=', (p: string) => `Server=tcp:db.example.net,1433;Database=app;User ID=sa;Password=${p};Encrypt=True;`],
    ['ADO.NET Pwd=', (p: string) => `Driver={ODBC Driver 18};Server=db;Uid=app;Pwd=${p};`],
    ['JDBC query password', (p: string) => `jdbc:mysql://db:3306/app?user=app&password=${p}&useSSL=true`],
    ['Azure storage AccountKey', (p: string) => `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${p}${chars(B64, 60)}==;EndpointSuffix=core.windows.net`],
    ['curl -u user:password', (p: string) => `curl -u admin:${p} https://api.example.com/v1/items`],
    ['.netrc', (p: string) => `machine api.example.com login bob password ${p}`],
    ['Slack webhook URL', (p: string) => `https://hooks.slack.com/services/T${chars(UPPER + DIGIT, 8)}/B${chars(UPPER + DIGIT, 8)}/${p}${chars(ALNUM, 10)}`],
    ['Discord webhook URL', (p: string) => `https://discord.com/api/webhooks/${chars(DIGIT, 18)}/${p}${chars(URLSAFE, 54)}`],
    ['Authorization: Bearer', (p: string) => `Authorization: Bearer ${p}${chars(ALNUM, 10)}`],
    ['Authorization: Basic', (p: string) => `authorization: Basic ${p}${chars(B64, 10)}==`],
    ['X-Api-Key header', (p: string) => `curl -H 'X-Api-Key: ${p}' https://api.example.com`],
    ['--password flag', (p: string) => `mysqldump --user root --password ${p} shop`],
    ['--token= flag', (p: string) => `deploy --token=${p} --prod`],
    ['docker -e', (p: string) => `docker run -e POSTGRES_PASSWORD=${p} postgres:16`],
    ['kubectl --from-literal', (p: string) => `kubectl create secret generic db --from-literal=password=${p}`],
    ['YAML nested', (p: string) => `spring:\n  datasource:\n    password: ${p}\n`],
    ['INI', (p: string) => `[client]\nuser = app\npassword = ${p}\n`],
    ['JSON', (p: string) => `{"user": "app", "password": "${p}"}`],
    ['Python kwarg', (p: string) => `connect(host="db", password="${p}")`],
    ['TOML', (p: string) => `[db]\npassword = "${p}"\n`],
  ] as const) {
    const p = pw();
    add(name, make(p), [p]);
  }
  // PEM private key blocks (RFC 7468), whole and cut short.
  for (const label of ['RSA PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'DSA PRIVATE KEY', 'PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'PGP PRIVATE KEY BLOCK']) {
    const body = [chars(B64, 64), chars(B64, 64), chars(B64, 20) + '=='].join('\n');
    add(`PEM ${label}`, `key:\n-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\nend`, [body.slice(0, 64), body.slice(-20)]);
  }
  const cut = chars(B64, 64);
  add('PEM block cut short', `-----BEGIN PRIVATE KEY-----\n${cut}`, [cut]);
  const json = chars(B64, 64);
  add('PEM in a service-account JSON', `{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n${json}\\n-----END PRIVATE KEY-----\\n"}`, [json]);
  return out;
}

export const SECRET_CASES: SecretCase[] = build();

/** Text that looks like it might hold a secret and does not: every one must come through redaction unchanged. */
export const CLEAN_CASES: string[] = [
  // Prose about secrets.
  'The password field is required.',
  'the password is required and must be at least 12 characters long',
  'Your password is incorrect, please try again.',
  'The token is valid for 3600 seconds.',
  'A secret is something you keep to yourself.',
  'Rotate the api key every 90 days; the secret is stored in Vault.',
  'Enter your password: (it will not be echoed)',
  'password: see the team vault',
  'Note: the token: is optional here',
  'Set the password to something long, then restart.',
  'Forgot your password? Click here to reset it.',
  'The bearer of this letter; Bearer authentication is described in RFC 6750.',
  'token budget: 4096 max, 512 min',
  'The task-oriented approach works; see sk-learn docs and the risk-assessment notes.',
  'password is empty',
  'the secret is out',
  'api key is missing',
  // Code.
  "const password = await prompt('Password: ');",
  'function getApiKey(): string { return process.env.OPENAI_API_KEY ?? ""; }',
  'interface Login { password: string; token?: string }',
  'if (password === confirm) save(password);',
  'if password == confirm: save(password)',
  'if (token != null) refresh(token);',
  'const token = req.headers.authorization;',
  'const secretKey = config.get("secretKey");',
  'let password = hashedPassword;',
  'self.api_key = api_key',
  'password = getpass.getpass()',
  'token = tokens[0]',
  'api_key := os.Getenv("API_KEY")',
  'secret_key = os.urandom(24)',
  'let token = await getToken();',
  'const { password, ...rest } = user;',
  'password: z.string().min(12),',
  'type Creds = { password: Password; token: Token };',
  'fn login(password: &str) -> Result<Token, Error> {',
  'pub token: String,',
  'func (c *Client) SetToken(token string) { c.token = token }',
  'export API_KEY=$OPENAI_API_KEY',
  'token=${TOKEN} and password={{ vault_password }}',
  'password: <your password>\ntoken: ${TOKEN}\nsecret: {{ vault.secret }}\n',
  'class Config:\n    password: str\n    token: Optional[str] = None\n    api_key: SecretStr\n',
  '    password = getpass()\n    token = self.token\n    api_key = os.environ.API_KEY\n    secret = value\n    password = DB_PASSWORD\n',
  'const schema = { apiKey: z.string().max(1024).nullable(), token: z.string() };',
  "token => token.trim()",
  'args.password, args.token = None, None',
  'PASSWORD_MIN_LENGTH = 12',
  'max_tokens = 4096\ntemperature = 0.7\n',
  'password_file = /etc/app/pw\ntoken_url = https://auth.example.com/token\nmax_tokens = 4096\n',
  'gcloud auth --credentials ./key.json\ncredentials: ~/.config/app/creds.json\ntoken = ../secrets/token.txt\n',
  'curl -d "max_tokens=512&temperature=0.7" https://api.example.com/v1/complete',
  'Use the --password option, or pass --token to the CLI; the non-secret --api-key flag is optional.',
  '// Like vLLM started with --api-key: anything but the key is refused.',
  'Authorization: string // a TypeScript field, not a header',
  'interface Auth {\n  password: string\n  token: Token\n}',
  'monkey = banana\nturkey: roasted\n',
  'keyboard: us\nkey_count: 3\n',
  // Git, hashes and identifiers.
  'commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39\nAuthor: Ann <ann@example.com>\nDate:   Mon May 6 10:00:00 2024 +0200\n\n    Fix token refresh\n',
  '3f2a9c1 Fix password reset flow (#123)\n8e7d6c5 Rotate api key docs\nb4a3921 Merge branch main',
  'sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, uuid 123e4567-e89b-12d3-a456-426614174000',
  'integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR6yxa2J6bRnJ2D+SA==',
  'docker pull ghcr.io/org/app@sha256:4b825dc642cb6eb9a060e54bf8d69288fbee4904e0f1d1b8b1f1a5c3d2e1f0a9',
  'Request id: 7c9e6679-7425-40de-944b-e07fc1f90ae7, trace 4bf92f3577b34da6a3ce929d0e0e4736',
  'ASK AKIA about it; hf_hub_download(repo_id="x"); ghp_ prefix means GitHub',
  'The sk- prefix marks a key; sk-learn is a library; npm_config_cache is a setting.',
  'color: #ff5733; background: #1a2b3c;',
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  // URLs, paths, mail.
  'Clone https://github.com/user/repo or git@github.com:org/repo.git, then open http://localhost:8080/a@b',
  'email me at bob@example.com, or see mailto:bob@example.com',
  'npm i https://registry.example.com:443/@scope/pkg and http://localhost:8080/a/@b',
  'See https://docs.example.com/auth/token?lang=en#password-reset',
  'Content-Type: application/json\nX-Request-Id: 1234567890abcdef\nAccept: */*',
  'ls ~/.ssh/id_ed25519.pub /etc/ssl/private',
  '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEabc\n-----END PUBLIC KEY-----',
  '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUExample\n-----END CERTIFICATE-----',
  'Stripe publishable keys start with pk_live_ and are safe in the browser.',
  'pk_live_51H8abcdEFGH1234ijkl',
  'Version 1.2.3-beta.4 released on 2024-05-01; build 20240501.1',
  '| field    | type   |\n|----------|--------|\n| password | string |\n| token    | string |',
  // Look-alikes of the mid-line and prose forms.
  'const apiToken = getApiToken(); // refreshed hourly',
  'headers: { Authorization: `Bearer ${token}` }',
  'The key: value pairs are separated by commas.',
  'primaryKey: true, sortKey: createdAt2',
  'tokenizer: gpt2\ntokens: 1532 prompt, 210 completion',
  'password_hash: $2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW',
  'SECRET_KEY_BASE: <%= ENV["SECRET_KEY_BASE"] %>',
  'access_token_expires_in: 3600\nrefresh_token_ttl: 86400',
  'auth: token\nmode: strict',
  '.secret-key { color: red; }',
  'Password: ********',
  'The API key is in the .env file, and the token is ready.',
  'the secret is 42, the password is base64-encoded, the token is 256-bit',
  'docker run -u 1000:1000 -v $PWD:/app image',
  'git push -u origin feature:main',
  'cd $PWD && PWD=/home/dev/app make',
  'npm_config_registry=https://registry.npmjs.org/',
  'if (secret !== expected) throw new Error("bad secret");',
  'const secret = process.env.SESSION_SECRET!;',
  'password: hashPassword(input),',
  'token: tokenValue, expires: 3600',
  'my password manager is great, the token bucket refills at 5/s',
];
