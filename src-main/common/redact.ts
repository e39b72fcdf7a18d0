// Secret redaction before anything is stored (pure TS, no I/O). Each match is replaced by a visible marker
// such as `[REDACTED:jwt]`, so a reader sees that something was there. The patterns follow the published
// formats of each issuer (OpenAI/Anthropic `sk-`, GitHub `ghp_`/`github_pat_`, AWS access key ids `AKIA`,
// Slack `xoxb-`, Google `AIza`, Hugging Face `hf_`, RFC 7519 JWTs, RFC 7468 PEM blocks, RFC 3986 userinfo).
// Redaction is idempotent: no pattern matches a marker, so text redacted twice is unchanged.

export type SecretKind =
  | 'private_key'
  | 'jwt'
  | 'anthropic_key'
  | 'openai_key'
  | 'github_token'
  | 'aws_key'
  | 'slack_token'
  | 'google_key'
  | 'hf_token'
  | 'bearer'
  | 'url_credentials'
  | 'secret';

export const marker = (kind: SecretKind): string => `[REDACTED:${kind}]`;

interface Rule {
  kind: SecretKind;
  re: RegExp;
  /** Builds the replacement from the match groups; default: the bare marker. */
  replace?: (...groups: string[]) => string;
  /** A check on the whole match; a match it refuses is left as it was. */
  accept?: (match: string) => boolean;
}

// Every pattern runs in linear time (issue #21: `"a-" x 50,000` took 30 s): a pattern that scans a run of characters
// starts only where that run starts (a lookbehind, not `\b`, which holds after every `-` inside the run), and no
// quantified group repeats without a bound. Keys are matched from their keyword on: the prefix of `DB_PASSWORD`
// stays in the text untouched, so it need not be part of the match.
// Order matters: whole blocks first, then specific token formats, then the generic header and assignment
// forms, which then see markers (never matched) instead of the tokens they contained.
const RULES: Rule[] = [
  {
    kind: 'private_key',
    // A truncated block (no END line) is redacted to the end of the text rather than left half visible.
    re: /-----BEGIN ((?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?)-----[\s\S]*?(?:-----END \1-----|$(?![\s\S]))/g,
  },
  { kind: 'jwt', re: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}/g },
  { kind: 'anthropic_key', re: /\bsk-ant-[A-Za-z0-9_-]{20,}/g },
  // A digit is required so that long hyphenated slugs after `sk-` are not taken for keys. It is checked on the match
  // (`accept`), not by a lookahead, which rescanned the rest of the run from every `sk-` in it: quadratic.
  { kind: 'openai_key', re: /\bsk-[A-Za-z0-9_-]{20,}/g, accept: (m) => /[0-9]/.test(m.slice(3)) },
  { kind: 'github_token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})/g },
  { kind: 'aws_key', re: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/g },
  { kind: 'slack_token', re: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { kind: 'google_key', re: /\bAIza[0-9A-Za-z_-]{35}/g },
  { kind: 'hf_token', re: /\bhf_[A-Za-z0-9]{30,}/g },
  {
    // An `Authorization` header with its scheme (RFC 9110 §11.6.2): the credentials after the scheme.
    kind: 'bearer',
    re: /\b(authorization["']?\s*[:=]\s*["']?(?:Bearer|Basic|Token|Digest)\s+)([A-Za-z0-9._~+/-]{6,}=*)/gi,
    replace: (prefix) => `${prefix}${marker('bearer')}`,
  },
  {
    // A bare `Bearer <token>` elsewhere (curl lines, logs); a digit is required so prose stays intact.
    kind: 'bearer',
    re: /\b(Bearer\s+)(?=[A-Za-z._~+/-]*[0-9])([A-Za-z0-9._~+/-]{12,}=*)/g,
    replace: (prefix) => `${prefix}${marker('bearer')}`,
  },
  {
    kind: 'url_credentials',
    re: /(?<![a-zA-Z0-9+.-])([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^\s:/?#@[\]]+:[^\s/?#@]+@/g,
    replace: (scheme) => `${scheme}${marker('url_credentials')}@`,
  },
  {
    // `KEY = "value"` / `"key": "value"` (quoted literals, in code, JSON, YAML) ...
    kind: 'secret',
    re: /(?<![A-Za-z0-9])(password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|credentials?)(["']?\s*[:=]\s*)(["'])(?!\[REDACTED:)([^"'\n]{4,})\3/gi,
    replace: (key, sep, quote) => `${key}${sep}${quote}${marker('secret')}${quote}`,
  },
  {
    // ... and `KEY=value` with no spaces (env files, query strings, command lines). Shell and template
    // references (`$X`, `${x}`, `{{x}}`, `<x>`) are not secrets.
    kind: 'secret',
    re: /(?<![A-Za-z0-9])(password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token)=(?![$<{%[])([^\s"'&;,)]{4,})/gi,
    replace: (key) => `${key}=${marker('secret')}`,
  },
];

export interface RedactResult {
  text: string;
  /** How many secrets of each kind were replaced. */
  found: Partial<Record<SecretKind, number>>;
}

export function redactSecrets(text: string): RedactResult {
  const found: Partial<Record<SecretKind, number>> = {};
  let out = text;
  for (const rule of RULES) {
    out = out.replace(rule.re, (...args: unknown[]) => {
      if (rule.accept && !rule.accept(args[0] as string)) return args[0] as string;
      found[rule.kind] = (found[rule.kind] ?? 0) + 1;
      // args: match, group1..groupN, offset, input (no named groups are used).
      const groups = args.slice(1, -2).map((g) => (typeof g === 'string' ? g : ''));
      return rule.replace ? rule.replace(...groups) : marker(rule.kind);
    });
  }
  return { text: out, found };
}

export function redact(text: string): string {
  return redactSecrets(text).text;
}

/** Redacts every string inside a JSON-like value (context messages carry extra fields). */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v);
    return out as T;
  }
  return value;
}
