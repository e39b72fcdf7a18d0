import { describe, expect, it } from 'vitest';
import { RedactBudget, RedactionTimeoutError, redact, redactSecrets } from './redact.ts';
import { CLEAN_CASES, SECRET_CASES } from './test-utils/redact-corpus.ts';

// Fake secrets in each issuer's format (random characters, never real credentials).
const FAKE = {
  openai: 'sk-proj-4fQ9xZ2mLw8RtY1uVb7NcK3pHs6DgJ0a',
  anthropic: 'sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm',
  github: 'ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5',
  githubPat: 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCD',
  aws: 'AKIAIOSFODNN7EXAMPLE',
  slack: 'xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx',
  google: 'AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY',
  hf: 'hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
  jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
};

function expectRedacted(input: string, kind: string, secret: string): string {
  const r = redactSecrets(input);
  expect(r.text).not.toContain(secret);
  expect(r.text).toContain(`[REDACTED:${kind}]`);
  expect(r.found[kind as keyof typeof r.found]).toBeGreaterThanOrEqual(1);
  return r.text;
}

describe('redact: one test per pattern', () => {
  it('OpenAI keys', () => {
    expect(expectRedacted(`key is ${FAKE.openai} ok`, 'openai_key', FAKE.openai)).toBe('key is [REDACTED:openai_key] ok');
  });
  it('Anthropic keys (not reported as OpenAI keys)', () => {
    const r = redactSecrets(`ANTHROPIC_API_KEY=${FAKE.anthropic}`);
    expect(r.text).toBe('ANTHROPIC_API_KEY=[REDACTED:anthropic_key]');
    expect(r.found.openai_key).toBeUndefined();
  });
  it('GitHub classic tokens and fine-grained PATs', () => {
    expectRedacted(`git clone https://x.com -c token ${FAKE.github}`, 'github_token', FAKE.github);
    expectRedacted(`pat: ${FAKE.githubPat}`, 'github_token', FAKE.githubPat);
  });
  it('AWS access key ids', () => {
    expect(expectRedacted(`aws_access_key_id = ${FAKE.aws}\n`, 'aws_key', FAKE.aws)).toBe('aws_access_key_id = [REDACTED:aws_key]\n');
  });
  it('Slack tokens', () => {
    expectRedacted(`SLACK=${FAKE.slack}`, 'slack_token', FAKE.slack);
  });
  it('Google API keys', () => {
    expectRedacted(`?key=${FAKE.google}&q=1`, 'google_key', FAKE.google);
  });
  it('Hugging Face tokens', () => {
    expectRedacted(`huggingface-cli login --token ${FAKE.hf}`, 'hf_token', FAKE.hf);
  });
  it('Authorization headers, with the scheme kept', () => {
    const text = expectRedacted('curl -H "Authorization: Bearer abcDEF123456ghiJKL789" https://api.x', 'bearer', 'abcDEF123456ghiJKL789');
    expect(text).toBe('curl -H "Authorization: Bearer [REDACTED:bearer]" https://api.x');
    expect(redact('Authorization: Basic dXNlcjpwYXNzd29yZA==')).toBe('Authorization: Basic [REDACTED:bearer]');
    expect(redact('{"authorization": "Token ab12cd34ef56"}')).toBe('{"authorization": "Token [REDACTED:bearer]"}');
  });
  it('bare Bearer tokens', () => {
    expect(redact('send Bearer 9f8e7d6c5b4a39281706 now')).toBe('send Bearer [REDACTED:bearer] now');
  });
  it('JWTs', () => {
    expect(expectRedacted(`cookie: session=${FAKE.jwt}; path=/`, 'jwt', FAKE.jwt)).toContain('session=[REDACTED:jwt]; path=/');
  });
  it('PEM private keys, the whole block', () => {
    const pem = [
      '-----BEGIN RSA PRIVATE KEY-----',
      'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
      'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK',
      '-----END RSA PRIVATE KEY-----',
    ].join('\n');
    const out = redact(`before\n${pem}\nafter`);
    expect(out).toBe('before\n[REDACTED:private_key]\nafter');
    expect(redact('-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----')).toBe(
      '[REDACTED:private_key]',
    );
  });
  it('a truncated PEM block is redacted to the end', () => {
    expect(redact('x\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC')).toBe('x\n[REDACTED:private_key]');
  });
  it('credentials in URLs', () => {
    expect(redact('DATABASE_URL=postgres://admin:s3cr3t-pw@db.internal:5432/app')).toBe(
      'DATABASE_URL=postgres://[REDACTED:url_credentials]@db.internal:5432/app',
    );
    expect(redact('git push https://bob:hunter22@github.com/bob/repo.git')).toBe(
      'git push https://[REDACTED:url_credentials]@github.com/bob/repo.git',
    );
  });
  it('password= and api_key= assignments, quoted and unquoted', () => {
    expect(redact('DB_PASSWORD=correct-horse-battery')).toBe('DB_PASSWORD=[REDACTED:secret]');
    expect(redact('curl "https://x.io/v1?api_key=abcd1234&limit=5"')).toBe('curl "https://x.io/v1?api_key=[REDACTED:secret]&limit=5"');
    expect(redact(`const apiKey = "live_51Habc";`)).toBe(`const apiKey = "[REDACTED:secret]";`);
    expect(redact(`{"password": "hunter2", "user": "bob"}`)).toBe(`{"password": "[REDACTED:secret]", "user": "bob"}`);
    expect(redact(`client_secret: 'AbC-123-xyz'`)).toBe(`client_secret: '[REDACTED:secret]'`);
  });
});

describe('redact: the gaps a probe found (issue #21 item 9)', () => {
  it('URL credentials with an empty user, a / or an @ in the password', () => {
    expect(redact('REDIS_URL=redis://:s3cretpw@cache:6379/0')).toBe('REDIS_URL=redis://[REDACTED:url_credentials]@cache:6379/0');
    expect(redact('fetch https://u:pa/ss@h.example/x')).toBe('fetch https://[REDACTED:url_credentials]@h.example/x');
    const mongo = redact('mongodb://app:p@ssw0rd@db1.internal:27017/app?authSource=admin');
    expect(mongo).toBe('mongodb://[REDACTED:url_credentials]@db1.internal:27017/app?authSource=admin');
    expect(mongo).not.toContain('ssw0rd');
  });
  it('INI, YAML and .env lines with spaces around the separator', () => {
    const ini = '[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = us-east-1\n';
    expect(redact(ini)).toBe(
      '[default]\naws_access_key_id = [REDACTED:aws_key]\naws_secret_access_key = [REDACTED:secret]\nregion = us-east-1\n',
    );
    expect(redact('db:\n  user: app\n  password: hunter2\n  host: db\n')).toBe('db:\n  user: app\n  password: [REDACTED:secret]\n  host: db\n');
    expect(redact('spring:\n  datasource:\n    password: correcthorse\r\n')).toBe('spring:\n  datasource:\n    password: [REDACTED:secret]\r\n');
    expect(redact('export SECRET_KEY = dj4ng0-k3y')).toBe('export SECRET_KEY = [REDACTED:secret]');
  });
  it('API key headers', () => {
    expect(redact('curl -H "X-Api-Key: 9f8e7d6c5b4a3928" https://api.x')).toBe('curl -H "X-Api-Key: [REDACTED:secret]" https://api.x');
    expect(redact('x-goog-api-key:AbCdEf123456\nPrivate-Token: glpat-abcdefgh1234')).toBe(
      'x-goog-api-key:[REDACTED:secret]\nPrivate-Token: [REDACTED:secret]',
    );
  });
  it('command-line flags that take a secret', () => {
    expect(redact('mysql --user root --password hunter2 app')).toBe('mysql --user root --password [REDACTED:secret] app');
    expect(redact('tool --password x')).toBe('tool --password [REDACTED:secret]');
    expect(redact(`pg --db-password 'two words' -v`)).toBe(`pg --db-password '[REDACTED:secret]' -v`);
    expect(redact('cli --api-key abc123def --verbose')).toBe('cli --api-key [REDACTED:secret] --verbose');
  });
  it('PGPASSWORD= and other names that end in a secret word', () => {
    expect(redact('PGPASSWORD=s3cret psql -h db')).toBe('PGPASSWORD=[REDACTED:secret] psql -h db');
    expect(redact('MYSQLPASSWORD="pa55word"')).toBe('MYSQLPASSWORD="[REDACTED:secret]"');
  });
  it('Stripe secret and restricted keys, not publishable ones', () => {
    const live = 'sk_live_' + '4eC39HqLyjWDarjtT1zdp7dc';
    expect(expectRedacted(`stripe.api_key = ${live}`, 'stripe_key', live)).toBe('stripe.api_key = [REDACTED:stripe_key]');
    expect(redact('rk_test_' + '51H8abcdEFGH1234ijkl')).toBe('[REDACTED:stripe_key]');
    expect(redact('pk_live_51H8abcdEFGH1234ijkl')).toBe('pk_live_51H8abcdEFGH1234ijkl');
  });
});

describe('redact: ordinary code and prose are left alone', () => {
  const untouched = [
    'The task-oriented approach works; see sk-learn docs and the risk-assessment notes.',
    "const password = await prompt('Password: ');",
    'function getApiKey(): string { return process.env.OPENAI_API_KEY ?? ""; }',
    'interface Login { password: string; token?: string }',
    'if (password === confirm) save(password);',
    'const token = req.headers.authorization;',
    'export API_KEY=$OPENAI_API_KEY',
    'token=${TOKEN} and password={{ vault_password }}',
    'Clone https://github.com/user/repo or git@github.com:org/repo.git, then open http://localhost:8080/a@b',
    'curl -d "max_tokens=512&temperature=0.7" https://api.example.com/v1/complete',
    'The bearer of this letter; Bearer authentication is described in RFC 6750.',
    'sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, uuid 123e4567-e89b-12d3-a456-426614174000',
    'Authorization: string // a TypeScript field, not a header',
    'ASK AKIA about it; hf_hub_download(repo_id="x"); ghp_ prefix means GitHub',
    'email me at bob@example.com, or see mailto:bob@example.com',
    'npm i https://registry.example.com:443/@scope/pkg and http://localhost:8080/a/@b',
    'Use the --password option, or pass --token to the CLI; the non-secret --api-key flag is optional.',
    'class Config:\n    password: str\n    token: Optional[str] = None\n    api_key: SecretStr\n',
    'interface Auth {\n  password: string\n  token: Token\n}',
    '    password = getpass()\n    token = self.token\n    api_key = os.environ.API_KEY\n    secret = value\n    password = DB_PASSWORD\n',
    'password: <your password>\ntoken: ${TOKEN}\nsecret: {{ vault.secret }}\n',
    'password_file = /etc/app/pw\ntoken_url = https://auth.example.com/token\nmax_tokens = 4096\n',
    'Content-Type: application/json\nX-Request-Id: 1234567890abcdef\nAccept: */*',
    'const schema = { apiKey: z.string().max(1024).nullable(), token: z.string() };',
    '// Like vLLM started with --api-key: anything but the key is refused.',
    'gcloud auth --credentials ./key.json\ncredentials: ~/.config/app/creds.json\ntoken = ../secrets/token.txt\n',
  ];
  for (const text of untouched) {
    it(JSON.stringify(text.slice(0, 48)), () => {
      expect(redactSecrets(text)).toEqual({ text, found: {} });
    });
  }
  it('is idempotent', () => {
    const once = redact(`a=${FAKE.openai} password="x1y2z3" ${FAKE.jwt} https://u:p4ss@h/`);
    expect(redact(once)).toBe(once);
  });
});

describe('redact: the time budget of one request (issue #21 item 1)', () => {
  it('a spent budget throws before any text is returned, and names the budget', () => {
    const budget = new RedactBudget(0);
    const until = performance.now() + 2;
    while (performance.now() <= until);
    let thrown: unknown;
    try {
      redactSecrets(`key ${FAKE.openai}`, budget);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(RedactionTimeoutError);
    expect((thrown as RedactionTimeoutError).code).toBe('too_large');
    expect((thrown as Error).message).toMatch(/longer than 0 ms; nothing of it was stored/);
  });
  it('a budget not spent changes nothing', () => {
    expect(redact(`key ${FAKE.openai}`, new RedactBudget(60_000))).toBe('key [REDACTED:openai_key]');
  });
});

describe('redact: secrets in the middle of a line', () => {
  it('the six forms a probe found stored in the clear', () => {
    expect(redact('x aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY')).toBe('x aws_secret_access_key = [REDACTED:secret]');
    expect(redact('my password: Tr0ub4dor&3 ok')).toBe('my password: [REDACTED:secret] ok');
    expect(redact('run with SECRET_KEY=hunter2isgood')).toBe('run with SECRET_KEY=[REDACTED:secret]');
    expect(redact('PRIVATE_KEY=abcdefgh12345678')).toBe('PRIVATE_KEY=[REDACTED:secret]');
    expect(redact('password is hunter2')).toBe('password is [REDACTED:secret]');
    expect(redact('password=Tr0ub4dor&3;')).toBe('password=[REDACTED:secret];');
  });
  it('an & still ends a value where a query string goes on', () => {
    expect(redact('GET /login?password=s3cret99&user=bob&next=/')).toBe('GET /login?password=[REDACTED:secret]&user=bob&next=/');
    expect(redact('?api_key=abcd1234&limit=5')).toBe('?api_key=[REDACTED:secret]&limit=5');
  });
  it('text after a value: only a literal of 6 or more counts, not a word or code', () => {
    expect(redact('password: see below')).toBe('password: see below');
    expect(redact('token = x + y')).toBe('token = x + y');
    expect(redact('secret: process.env.SESSION_SECRET!, next')).toBe('secret: process.env.SESSION_SECRET!, next');
    expect(redact('set clientSecret: Zk8pQ2vX9wLm and go')).toBe('set clientSecret: [REDACTED:secret] and go');
  });
  it('prose names a secret only when the value is not a word', () => {
    expect(redact('the api key was 9F8ffUDw34, keep it safe')).toBe('the api key was [REDACTED:secret], keep it safe');
    expect(redact('the password is required; the token is base64-encoded')).toBe('the password is required; the token is base64-encoded');
  });
  it('curl -u, .netrc and ODBC Pwd=, but not a uid:gid pair nor the working directory', () => {
    expect(redact('curl -u admin:S3cretPass https://x')).toBe('curl -u admin:[REDACTED:secret] https://x');
    expect(redact('machine h login bob password p4ssw0rd')).toBe('machine h login bob password [REDACTED:secret]');
    expect(redact('Uid=app;Pwd=abc123;')).toBe('Uid=app;Pwd=[REDACTED:secret];');
    expect(redact('docker run -u 1000:1000 img; PWD=/home/dev make')).toBe('docker run -u 1000:1000 img; PWD=/home/dev make');
  });
  it("issuers' token shapes, with the webhook host kept", () => {
    const glpat = 'glpat-' + 'Ab3dEf7hIj1kLm9nOp2q';
    expect(redactSecrets(`token ${glpat} here`)).toEqual({ text: 'token [REDACTED:api_token] here', found: { api_token: 1 } });
    expect(redact('https://hooks.slack.com/services/T0000AAAA/B1111BBBB/abcdefGHIJKL123456')).toBe('https://hooks.slack.com/services/[REDACTED:url_credentials]');
  });
});

describe('redact: the corpus (src-main/common/test-utils/redact-corpus.ts)', () => {
  it(`has a few hundred secret forms (${SECRET_CASES.length}) and a hundred look-alikes (${CLEAN_CASES.length})`, () => {
    expect(SECRET_CASES.length).toBeGreaterThanOrEqual(300);
    expect(CLEAN_CASES.length).toBeGreaterThanOrEqual(100);
  });
  it.each(SECRET_CASES.map((c) => [c.name, c] as const))('secret: %s', (_, c) => {
    const out = redact(c.text);
    expect(out).toContain('[REDACTED:');
    for (const p of c.pieces) expect(out).not.toContain(p);
    expect(redact(out)).toBe(out);
  });
  it.each(CLEAN_CASES)('look-alike: %j', (text) => {
    expect(redactSecrets(text)).toEqual({ text, found: {} });
  });
});
