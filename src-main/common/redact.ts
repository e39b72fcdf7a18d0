// Secret redaction before anything is stored (pure TS, no I/O). Each match is replaced by a visible marker
// such as `[REDACTED:jwt]`, so a reader sees that something was there. The patterns follow the published
// formats of each issuer (OpenAI/Anthropic `sk-`, GitHub `ghp_`/`github_pat_`, AWS access key ids `AKIA`,
// Slack `xoxb-`, Google `AIza`, Hugging Face `hf_`, Stripe `sk_live_`, RFC 7519 JWTs, RFC 7468 PEM blocks, RFC 3986 userinfo),
// and the other issuers' formats in TOKEN_SHAPES (after gitleaks' rules, config/gitleaks.toml).
// Redaction is idempotent: no pattern matches a marker, so text redacted twice is unchanged.
import { ReinError } from './errors.ts';

export type SecretKind =
  | 'private_key'
  | 'jwt'
  | 'anthropic_key'
  | 'openai_key'
  | 'stripe_key'
  | 'github_token'
  | 'aws_key'
  | 'slack_token'
  | 'google_key'
  | 'hf_token'
  | 'api_token'
  | 'bearer'
  | 'url_credentials'
  | 'secret';

export const marker = (kind: SecretKind): string => `[REDACTED:${kind}]`;

/** A match: [match, group 1, …, group N] (a group that took no part is undefined), with its index and input. */
type Match = RegExpExecArray;

interface Rule {
  kind: SecretKind;
  re: RegExp;
  /** The replacement, a String.replace pattern (`$1` is group 1); default: the bare marker. */
  to?: string;
  /** A check on the match that a pattern cannot make in linear time (a digit, a key's name); a match it refuses is left. */
  accept?: (m: Match) => boolean;
}

// The names a key-value pair's key ends with when its value is a secret. `pass…` needs no word start, so that
// `PGPASSWORD` counts (libpq's environment variable); the others do, so that `maxtoken` does not.
const KEY = String.raw`(?:pass(?:word|wd|phrase)|(?<![A-Za-z0-9])(?:(?:secret|private|signing|encryption|master|account|session)[_-]?key|secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token))`;
/** A whole key name (INI, YAML, env) that names a secret: `aws_secret_access_key`, `DB_PASSWORD`, `client_secret`. */
const SECRET_NAME =
  /(?:pass(?:word|wd|phrase)|(?:^|[^A-Za-z0-9])(?:(?:secret|private|signing|encryption|master|session|account)[_-]?key|secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|credentials?))$/i;
/** A key name that names a secret: SECRET_NAME, or a camelCase one (`clientSecret`, `githubToken`, `dbPassword`). */
const secretName = (name: string): boolean =>
  SECRET_NAME.test(name) || /[a-z0-9](?:Secret|SecretKey|PrivateKey|ApiKey|AccessKey|Token|Password|Passwd|Passphrase|Credentials?)$/.test(name);

// Words that stand where a value goes in docs, types and prose, and are not secrets: `password: str`,
// `token = None`, "use --password to".
const NOT_VALUES = new Set(
  ('str string bytes int bool boolean none null nil true false undefined required optional any object unknown never ' +
    'secret secrets password passwd token tokens key value env input prompt yes no on off ' +
    'a an the to or and of for in on with when if is it as by from at this that which only instead flag option ' +
    'argument parameter here there').split(' '),
);

/**
 * Whether a bare (unquoted) value after a secret's key is a literal rather than code, prose or a path. Code is a call
 * or an index (`getpass()`, `env["X"]`), a dotted reference (`os.environ.X`, `self.token`), a statement end (`;`), an
 * ENV_NAME or a type name (`SecretStr`). A plain lowercase word counts only where `words` is set (YAML, a flag's
 * value): in an `x = y` assignment it is far more often a variable than a password.
 */
function literalValue(v: string, words: boolean): boolean {
  if (/[()[\]{}"'`;,]/.test(v)) return false;
  // No name or word is this long, and the group loops below would overflow the regexp stack on megabytes.
  if (v.length > 256) return true;
  if (NOT_VALUES.has(v.toLowerCase())) return false;
  // A relative or home path names where a secret is (`--credentials ./key.json`, `token: ~/.tok`), not the secret.
  if (/^(?:~|\.\.?)\//.test(v)) return false;
  // (Each test is made only where it can hold: a million values can be checked in one 8 MB text.)
  // (`process.env.X!`: TypeScript's non-null assertion ends a reference too.)
  if (v.includes('.') && /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+!?$/.test(v)) return false;
  if (v.includes('_') && /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(v)) return false;
  if (/^[A-Za-z_.]+$/.test(v)) return words && /^[a-z]+$/.test(v);
  return true;
}

/**
 * Issuers' token formats not written out as rules of their own below: a prefix, then a minimum run of the issuer's
 * alphabet (gitleaks' config/gitleaks.toml and the issuers' docs). Each entry is one alternative of a single pattern
 * that starts only where a run of token characters starts, so the whole table costs one pass.
 */
const TOKEN_SHAPES: [issuer: string, pattern: string][] = [
  ['GitLab (personal, deploy, runner, pipeline, feed, …)', String.raw`gl(?:pat|dt|rt|ptt|soat|cbt|imt|ft|oas|agent|ffct)-[A-Za-z0-9_-]{20}[A-Za-z0-9_.-]*`],
  ['Slack app-level', String.raw`xapp-[0-9]-[A-Za-z0-9-]{20}[A-Za-z0-9-]*`],
  ['Stripe webhook signing', String.raw`whsec_[A-Za-z0-9]{24}[A-Za-z0-9]*`],
  ['Google OAuth client secret', String.raw`GOCSPX-[A-Za-z0-9_-]{24}[A-Za-z0-9_-]*`],
  ['Google OAuth access token', String.raw`ya29\.[A-Za-z0-9_-]{30}[A-Za-z0-9_-]*`],
  ['npm', String.raw`npm_[A-Za-z0-9]{36}[A-Za-z0-9]*`],
  ['PyPI', String.raw`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50}[A-Za-z0-9_-]*`],
  ['Hugging Face organisation', String.raw`api_org_[A-Za-z0-9]{30}[A-Za-z0-9]*`],
  ['Twilio API key', String.raw`SK[0-9a-f]{32}(?![A-Za-z0-9])`],
  ['SendGrid', String.raw`SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}[A-Za-z0-9_-]*`],
  ['Mailgun', String.raw`key-[0-9a-f]{32}(?![A-Za-z0-9])`],
  ['Mailchimp', String.raw`[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])`],
  ['Shopify', String.raw`shp(?:at|ss|ca|pa)_[A-Fa-f0-9]{32}[A-Fa-f0-9]*`],
  ['DigitalOcean', String.raw`do[opr]_v1_[a-f0-9]{64}[a-f0-9]*`],
  ['Databricks', String.raw`dapi[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])`],
  ['HashiCorp Vault', String.raw`hv[sbr]\.[A-Za-z0-9_-]{90}[A-Za-z0-9_-]*`],
  ['Terraform Cloud', String.raw`[a-z0-9]{14}\.atlasv1\.[a-z0-9_=-]{60}[a-z0-9_=-]*`],
  ['Doppler', String.raw`dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40}[A-Za-z0-9]*`],
  ['Pulumi', String.raw`pul-[a-f0-9]{40}[a-f0-9]*`],
  ['Linear', String.raw`lin_(?:api|oauth)_[A-Za-z0-9]{40}[A-Za-z0-9]*`],
  ['Notion', String.raw`(?:ntn_|secret_)[A-Za-z0-9]{43}[A-Za-z0-9]*`],
  ['Figma', String.raw`fig[dou]_[A-Za-z0-9_-]{40}[A-Za-z0-9_-]*`],
  ['Grafana', String.raw`(?:glc_[A-Za-z0-9+/]{32}[A-Za-z0-9+/]*={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})`],
  ['New Relic', String.raw`NR(?:AK|II|JS)-[A-Z0-9]{27}[A-Za-z0-9]*`],
  ['Sentry', String.raw`sntry[su]_[A-Za-z0-9+/=_-]{40}[A-Za-z0-9+/=_-]*`],
  ['Postman', String.raw`PMAK-[a-f0-9]{24}-[a-f0-9]{34}`],
  ['Replicate', String.raw`r8_[A-Za-z0-9]{37}[A-Za-z0-9]*`],
  ['Groq', String.raw`gsk_[A-Za-z0-9]{48}[A-Za-z0-9]*`],
  ['xAI', String.raw`xai-[A-Za-z0-9]{70}[A-Za-z0-9]*`],
  ['Perplexity', String.raw`pplx-[A-Za-z0-9]{40}[A-Za-z0-9]*`],
  ['age', String.raw`AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`],
  ['Docker Hub', String.raw`dckr_(?:pat|oat)_[A-Za-z0-9_-]{27}[A-Za-z0-9_-]*`],
  ['RubyGems', String.raw`rubygems_[a-f0-9]{48}[a-f0-9]*`],
  ['Supabase', String.raw`(?:sbp|sb_secret)_[A-Za-z0-9]{40}[A-Za-z0-9]*`],
  ['Telegram bot', String.raw`[0-9]{8,10}:AA[A-Za-z0-9_-]{32}[A-Za-z0-9_-]*`],
  ['Square', String.raw`(?:sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}|EAAA[A-Za-z0-9_-]{60})[A-Za-z0-9_-]*`],
  ['Alibaba Cloud', String.raw`LTAI[A-Za-z0-9]{20}(?![A-Za-z0-9])`],
  ['PlanetScale', String.raw`pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32}[A-Za-z0-9_.=-]*`],
  ['Dynatrace', String.raw`dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}`],
  ['Atlassian', String.raw`ATATT3[A-Za-z0-9_=-]{100}[A-Za-z0-9_=-]*`],
  ['LangSmith', String.raw`lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}`],
  ['Tavily', String.raw`tvly-[A-Za-z0-9]{32}[A-Za-z0-9]*`],
  ['Pinecone', String.raw`pcsk_[A-Za-z0-9]{6}_[A-Za-z0-9_-]{50}[A-Za-z0-9_-]*`],
  ['Mapbox secret', String.raw`sk\.eyJ[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*`],
  ['Sourcegraph', String.raw`sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}`],
  ['Netlify', String.raw`nf[pc]_[A-Za-z0-9]{36}[A-Za-z0-9]*`],
  ['Fly.io', String.raw`fo1_[A-Za-z0-9_-]{43}[A-Za-z0-9_-]*`],
  ['Buildkite', String.raw`bkua_[a-f0-9]{40}`],
  ['Contentful', String.raw`CFPAT-[A-Za-z0-9_-]{43}[A-Za-z0-9_-]*`],
  ['Clojars', String.raw`CLOJARS_[a-z0-9]{60}`],
  ['Airtable', String.raw`pat[A-Za-z0-9]{14}\.[a-f0-9]{64}`],
  ['Cerebras', String.raw`csk-[a-z0-9]{48}[a-z0-9]*`],
  ['Flutterwave', String.raw`FLWSECK(?:_TEST)?-[a-f0-9]{32}-X`],
  ['Shippo', String.raw`shippo_(?:live|test)_[a-f0-9]{40}`],
];

const LINE_END = /[ \t]*(?:\r?\n|$)/y;
/** Whether only spaces follow `at` up to the end of its line (matches never share the run, so this stays linear). */
function lineEndsAt(text: string, at: number): boolean {
  LINE_END.lastIndex = at;
  return LINE_END.test(text);
}

/** A value that prose names as a secret and that is not a word: `hunter2`, `c0rrect-h0rse`, `Pa55w0rd!`, not
 *  `required`, `base64-encoded`, `256-bit`. */
function secretLooking(v: string): boolean {
  if (v.length < 6 || v.length > 256 || NOT_VALUES.has(v.toLowerCase())) return false;
  if (/-(?:encoded|decoded|hashed|encrypted|signed|based|bits?|bytes?|long|chars?|characters|digits?)$/i.test(v)) return false;
  if (!/[A-Za-z]/.test(v)) return false;
  return /[0-9]/.test(v) || (v.length >= 8 && /[^A-Za-z0-9-]/.test(v));
}

// Every pattern runs in linear time and constant regexp stack (issue #21: `"a-" x 50,000` took 30 s, and 8 MB of
// `"sk-" x 2.7M` overflowed the stack):
// - a pattern that scans a run of characters starts only where that run starts (a lookbehind, not `\b`, which holds
//   after every `-` inside the run), and no group repeats without a bound;
// - a run is scanned by a bare `*` or `+` over one character class, never `{n,}`: V8's irregexp backtracks such a
//   greedy loop by stepping back, but compiles `{n,}` to a loop that pushes one backtrack entry per character, so
//   over a megabyte run it overflows. A minimum length is written `{n}` then `*`;
// - what a pattern can only check by rescanning (a digit somewhere in the run: a lookahead rescanned the rest of the
//   run from every start in it, quadratic) is checked on the match (`accept`). A refused match is skipped whole,
//   as the pattern would have failed from each of its starts.
// Keys are matched from their keyword on: the prefix of `DB_PASSWORD` stays in the text untouched, so it need not be
// part of the match. Order matters: whole blocks first, then specific token formats, then the generic header and
// assignment forms, which then see markers (never matched) instead of the tokens they contained.
const RULES: Rule[] = [
  {
    kind: 'private_key',
    // A truncated block (no END line) is redacted to the end of the text rather than left half visible.
    re: /-----BEGIN ((?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?)-----[\s\S]*?(?:-----END \1-----|$(?![\s\S]))/g,
  },
  { kind: 'jwt', re: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5}[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]{5}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{8}[A-Za-z0-9_-]*/g },
  { kind: 'anthropic_key', re: /\bsk-ant-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*/g },
  // A digit is required so that long hyphenated slugs after `sk-` are not taken for keys.
  { kind: 'openai_key', re: /\bsk-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*/g, accept: (m) => /[0-9]/.test(m[0]!.slice(3)) },
  // Stripe secret and restricted keys (`sk_live_`, `rk_live_`, and their test twins); `pk_` keys are public.
  { kind: 'stripe_key', re: /(?<![A-Za-z0-9_])[rs]k_(?:live|test)_[A-Za-z0-9]{16}[A-Za-z0-9]*/g },
  { kind: 'github_token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{30}[A-Za-z0-9]*|github_pat_[A-Za-z0-9_]{22}[A-Za-z0-9_]*)/g },
  { kind: 'aws_key', re: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/g },
  { kind: 'slack_token', re: /\bxox[abposr]-[A-Za-z0-9-]{10}[A-Za-z0-9-]*/g },
  { kind: 'google_key', re: /\bAIza[0-9A-Za-z_-]{35}/g },
  { kind: 'hf_token', re: /\bhf_[A-Za-z0-9]{30}[A-Za-z0-9]*/g },
  // `+` and `/` end a start too, so that a base64 run (an image, a hash) is not searched inside for a prefix.
  { kind: 'api_token', re: new RegExp(String.raw`(?<![A-Za-z0-9_.+/-])(?:${TOKEN_SHAPES.map(([, p]) => p).join('|')})`, 'g') },
  {
    // Slack and Discord webhook URLs: the path is the credential; the host stays readable.
    kind: 'url_credentials',
    re: /((?:hooks\.slack\.com\/(?:services|workflows)|discord(?:app)?\.com\/api\/webhooks)\/)[A-Za-z0-9_-]{6}[A-Za-z0-9/_-]*/g,
    to: `$1${marker('url_credentials')}`,
  },
  {
    // An `Authorization` header with its scheme (RFC 9110 §11.6.2): the credentials after the scheme.
    kind: 'bearer',
    re: /\b(authorization["']?\s*[:=]\s*["']?(?:Bearer|Basic|Token|Digest)\s+)[A-Za-z0-9._~+/-]{6}[A-Za-z0-9._~+/-]*=*/gi,
    to: `$1${marker('bearer')}`,
  },
  {
    // A bare `Bearer <token>` elsewhere (curl lines, logs); a digit is required so prose stays intact.
    kind: 'bearer',
    re: /\b(Bearer\s+)([A-Za-z0-9._~+/-]{12}[A-Za-z0-9._~+/-]*)=*/g,
    accept: (m) => /[0-9]/.test(m[2]!),
    to: `$1${marker('bearer')}`,
  },
  {
    // An API key header (`X-Api-Key`, `X-Goog-Api-Key`, `Private-Token`, `X-Auth-Token`): header names are dashed
    // words (so `apiKey: z.string()` in code is not one), and the value ends the token (not `--api-key: anything`).
    kind: 'secret',
    re: /(?<![A-Za-z0-9_-])((?:[A-Za-z][A-Za-z0-9-]*-)?api-key|[A-Za-z][A-Za-z0-9-]*-(?:apikey|token|secret))([ \t]*:[ \t]*)(?![$<{%[(])[A-Za-z0-9._~+/=-]{8}[A-Za-z0-9._~+/=-]*(?=[\s"',;]|$)/gi,
    to: `$1$2${marker('secret')}`,
  },
  {
    // RFC 3986 userinfo `user:password@`. The user may be empty (`redis://:pw@host`). A password is read up to the last
    // `@` before the path (`mongodb://app:p@ssw0rd@host`); one with a `/` but no `@` (`https://u:pa/ss@h`, not valid
    // RFC 3986 but written) is taken when what precedes its first `/` is not a port (`http://host:8080/a@b` is a path).
    // The `/` pieces are bounded, so that each `://` in a run of them reads only the next few.
    kind: 'url_credentials',
    re: /(?<![a-zA-Z0-9+.-])([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^\s:/?#@[\]]*:(?:[^\s/?#]+|(?![0-9]*\/)[^\s/?#@]+(?:\/[^\s/?#@]*){1,4})@/g,
    to: `$1${marker('url_credentials')}@`,
  },
  {
    // `KEY = "value"` / `"key": "value"` (quoted literals, in code, JSON, YAML) ...
    kind: 'secret',
    re: new RegExp(String.raw`(${KEY}|(?<![A-Za-z0-9])credentials?)(["']?\s*[:=]\s*)(["'])(?!\[REDACTED:)[^"'\n]{4}[^"'\n]*\3`, 'gi'),
    to: `$1$2$3${marker('secret')}$3`,
  },
  {
    // ... `KEY=value` with no spaces (env files, query strings, command lines, `PGPASSWORD=x psql`). Shell and template
    // references (`$X`, `${x}`, `{{x}}`, `<x>`) are not secrets ...
    kind: 'secret',
    // An `&` ends the value only where the next `name=` of a query string follows (`password=Tr0ub4dor&3` is one
    // value; `api_key=x&limit=5` is two); a few `&` are taken, a bounded group so the regexp stack stays constant.
    re: new RegExp(String.raw`(${KEY})=(?![$<{%[])[^\s"'&;,)]{4}[^\s"'&;,)]*(?:&(?![A-Za-z_][A-Za-z0-9_.[\]-]*=)[^\s"'&;,)]*){0,8}`, 'gi'),
    to: `$1=${marker('secret')}`,
  },
  {
    // ... a whole line `key = value` or `key: value` (INI such as ~/.aws/credentials, YAML, .env), the key's name
    // ending in a secret's name ...
    kind: 'secret',
    re: /^([ \t]*(?:export[ \t]+)?)([A-Za-z0-9_.-]*(?:pass(?:word|wd|phrase)|secret|key|token|credentials?))([ \t]*([:=])[ \t]*)(?![$<{%[("'`*])([^\s]+)(?=[ \t]*\r?$)/gim,
    accept: (m) => secretName(m[2]!) && literalValue(m[5]!, m[4] === ':'),
    to: `$1$2$3${marker('secret')}`,
  },
  {
    // ... the same anywhere in a line, pasted mid-sentence (`x aws_secret_access_key = …`, `my password: … ok`). A
    // value that ends its line is judged as above; one with text after it must look like a literal of at least 6
    // characters, since prose and code go on after a word (`password: see below`, `token = x + y`) ...
    kind: 'secret',
    re: /(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]*(?:pass(?:word|wd|phrase)|secret|key|token|credentials?))(["']?[ \t]*([:=])[ \t]*)(?![$<{%[("'`*=>])([^\s,;)}\]'"`]+)/gi,
    accept: (m) => {
      const atEnd = lineEndsAt(m.input, m.index + m[0].length);
      return secretName(m[1]!) && literalValue(m[4]!, m[3] === ':' && atEnd) && (atEnd || m[4]!.length >= 6);
    },
    to: `$1$2${marker('secret')}`,
  },
  {
    // ... prose that says what the secret is: `password is hunter2`, `the api key was …`, `my passphrase: …`. Only a
    // value with a letter and a digit (or a letter and a symbol, 8 or more long) counts, not a word.
    kind: 'secret',
    re: /(?<![A-Za-z0-9_-])((?:pass(?:word|wd|phrase)|secret|token|api[ _-]?key)[ \t]+(?:is|was)[ \t]*:?[ \t]+)(?![$<{%[(])([^\s,;)}\]'"`]*[^\s,;)}\]'"`.!?:])/gi,
    accept: (m) => secretLooking(m[2]!),
    to: `$1${marker('secret')}`,
  },
  {
    // ... connection strings' `Pwd=` (ODBC), which is not `PWD=/home/…` (the shell's working directory) ...
    kind: 'secret',
    re: /(?<![A-Za-z0-9_])(pwd=)(?![$<{%[/~.])[^\s"';&]{3}[^\s"';&]*/gi,
    to: `$1${marker('secret')}`,
  },
  {
    // ... `curl -u user:password` (a user id pair such as `docker -u 1000:1000` is not a password) and a .netrc line ...
    kind: 'secret',
    re: /(?<![^\s])(-u[ \t]*|--user[ \t=]+)(["']?)([^\s:'"]+):(?![$<{%[])([^\s'"]+)/g,
    accept: (m) => !/^[0-9]+$/.test(m[4]!),
    to: `$1$2$3:${marker('secret')}`,
  },
  {
    kind: 'secret',
    re: /(\blogin[ \t]+[^\s]+[ \t]+password[ \t]+)(?![$<{%[])[^\s]+/g,
    to: `$1${marker('secret')}`,
  },
  {
    // ... and a command-line flag's value (`--password x`, `--api-key "x y"`); `--password=x` is the form above.
    kind: 'secret',
    re: /(?<![^\s"'(])(--?(?:[A-Za-z0-9-]*-)?(?:pass(?:word|wd|phrase)?|secret|api-?key|(?:auth-|access-|refresh-)?token|credentials?)[ \t]+)(?:(["'])[^"'\n]+\2|(?![-$<{%[])([^\s"'`;|&)]+))/gi,
    accept: (m) => m[2] !== undefined || literalValue(m[3]!, true),
    to: `$1$2${marker('secret')}$2`,
  },
];

/**
 * The time one request's redaction may take (a captured turn, a rating, an imported record: every string of it
 * together). Each rule runs in linear time, so this is far above real input at the largest `capture.maxTextChars`;
 * it bounds how long the server's thread can be held, whatever a rule's cost turns out to be on some input. It is
 * checked between rules: a rule in progress finishes.
 */
export const REDACT_BUDGET_MS = 5_000;

/** Thrown when a request's redaction runs past its budget. Nothing of the request is stored, redacted or not. */
export class RedactionTimeoutError extends ReinError {
  constructor(ms: number) {
    super('too_large', `redacting this input took longer than ${ms} ms; nothing of it was stored (send less text, or lower capture.maxTextChars)`, {
      detail: { budgetMs: ms },
    });
    this.name = 'RedactionTimeoutError';
  }
}

/** One request's time budget, shared by every string of the request. */
export class RedactBudget {
  readonly ms: number;
  private readonly end: number;
  constructor(ms: number = REDACT_BUDGET_MS) {
    this.ms = ms;
    this.end = performance.now() + ms;
  }
  check(): void {
    if (performance.now() > this.end) throw new RedactionTimeoutError(this.ms);
  }
}

/**
 * `text.replace(re, to)` for the matches `accept` takes; a refused match is skipped whole, as replace would. An exec
 * loop, not a replace callback, which costs three times as much a match (a million matches fit in 8 MB).
 */
function replaceAccepted(text: string, re: RegExp, to: string, accept: (m: Match) => boolean): string {
  // `to` split at its `$n`: literal, group number, literal, …
  const pattern = to.split(/\$(\d)/);
  const out: string[] = [];
  let done = 0;
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    // No rule matches the empty string; this only guards the loop.
    if (m[0].length === 0) re.lastIndex++;
    if (m[0].length === 0 || !accept(m)) continue;
    out.push(text.slice(done, m.index), pattern[0]!);
    for (let i = 1; i < pattern.length; i += 2) out.push(m[Number(pattern[i])] ?? '', pattern[i + 1]!);
    done = m.index + m[0].length;
  }
  if (done === 0) return text;
  out.push(text.slice(done));
  return out.join('');
}

function count(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

export interface RedactResult {
  text: string;
  /** How many secrets of each kind were replaced. */
  found: Partial<Record<SecretKind, number>>;
}

/** Redacts `text`; with a budget, throws RedactionTimeoutError (and returns nothing) once the budget is spent. */
export function redactSecrets(text: string, budget?: RedactBudget): RedactResult {
  const found: Partial<Record<SecretKind, number>> = {};
  let out = text;
  for (const rule of RULES) {
    budget?.check();
    const to = rule.to ?? marker(rule.kind);
    const before = count(out, marker(rule.kind));
    // A pattern string is replaced natively; a callback costs about a microsecond a match, and 8 MB can hold a million.
    if (rule.accept === undefined) out = out.replace(rule.re, to);
    else out = replaceAccepted(out, rule.re, to, rule.accept);
    // No rule matches a marker, so the markers added are the secrets this rule replaced.
    const n = count(out, marker(rule.kind)) - before;
    if (n > 0) found[rule.kind] = (found[rule.kind] ?? 0) + n;
  }
  budget?.check();
  return { text: out, found };
}

export function redact(text: string, budget?: RedactBudget): string {
  return redactSecrets(text, budget).text;
}
