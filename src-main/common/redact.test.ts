import { describe, expect, it } from 'vitest';
import { redact, redactDeep, redactSecrets } from './redact.ts';

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
  it('redacts every string inside nested values', () => {
    expect(redactDeep([{ role: 'user', content: `use ${FAKE.hf}`, meta: { n: 1, k: FAKE.aws } }])).toEqual([
      { role: 'user', content: 'use [REDACTED:hf_token]', meta: { n: 1, k: '[REDACTED:aws_key]' } },
    ]);
  });
});
