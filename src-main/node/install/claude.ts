// `rein setup claude`: `type:"http"` hooks in ~/.claude/settings.json and the `/rl` command file.
// The token: by default the literal token goes into the header and settings.json is made 0600, so a one-click
// install works at once, with no shell-profile edit and no restart of the user's shell (verified against the real
// Claude Code 2.1 in e2e/agents). With --token-from-env the header is `Bearer $REIN_TOKEN` instead: Claude Code
// interpolates `$VAR` in an http hook's header values, but only for variables listed in that hook's
// `allowedEnvVars` (code.claude.com settings reference, "headers" / "allowedEnvVars"; others become empty strings),
// and the user's shell profile reads the 0600 token file.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import { evidence, onPath } from './detect.ts';
import type { FileEdit, InstallEnv, Integration } from './installer.ts';
import { jsonText, parseJsonObject } from './json-file.ts';
import { isRecord } from '../integrations/shared/text.ts';

export const CLAUDE_EVENTS = ['Stop', 'SubagentStop', 'UserPromptSubmit', 'UserPromptExpansion'] as const;
export type ClaudeEvent = (typeof CLAUDE_EVENTS)[number];

/** `type: "http"` hooks came in Claude Code 2.1.63; an older one would not call Rein at all. */
export const CLAUDE_MIN_VERSION = '2.1.63';
/**
 * Before 2.1.101 Claude Code dropped the whole settings.json when it held a hook event name it did not know, so an
 * event newer than the installed version would switch off every hook and setting the user has. From 2.1.101 an
 * unknown name is skipped. The release that added UserPromptExpansion is not pinned here, so it is written only
 * from 2.1.101, where writing it is safe either way; below that `/rl` is answered through UserPromptSubmit alone.
 */
const EVENT_SINCE: Record<ClaudeEvent, string> = { Stop: CLAUDE_MIN_VERSION, SubagentStop: CLAUDE_MIN_VERSION, UserPromptSubmit: CLAUDE_MIN_VERSION, UserPromptExpansion: '2.1.101' };

const parts = (v: string): number[] => v.split('.').map(Number);
export function versionAtLeast(v: string, min: string): boolean {
  const [a, b] = [parts(v), parts(min)];
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** The installed Claude Code's version from `claude --version` ("2.1.101 (Claude Code)"), or null when no `claude` is on PATH. */
export function claudeVersion(env: InstallEnv): string | null {
  const bin = onPath('claude', env.env);
  if (bin === null) return null;
  let out: string;
  try {
    out = execFileSync(bin, ['--version'], { env: env.env as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new ReinError('conflict', `${bin} --version failed, so Rein cannot tell which hooks it supports: ${(e as Error).message}`, { detail: { path: bin } });
  }
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (m === null) throw new ReinError('conflict', `${bin} --version printed no version (${JSON.stringify(out.trim().slice(0, 100))})`, { detail: { path: bin } });
  return m[0];
}

/**
 * The events to write for this Claude Code. No `claude` on PATH (only its config directory): the events every
 * version with HTTP hooks knows.
 */
export function claudeEvents(env: InstallEnv): ClaudeEvent[] {
  const v = claudeVersion(env);
  if (v !== null && !versionAtLeast(v, CLAUDE_MIN_VERSION)) {
    throw new ReinError('conflict', `Claude Code ${v} has no HTTP hooks (they need ${CLAUDE_MIN_VERSION} or newer): update it with \`claude update\`, then run rein setup claude again`, { detail: { version: v } });
  }
  return CLAUDE_EVENTS.filter((e) => versionAtLeast(v ?? CLAUDE_MIN_VERSION, EVENT_SINCE[e]));
}
export const TOKEN_ENV = 'REIN_TOKEN';
const OUR_URL = /^http:\/\/127\.0\.0\.1:\d+\/hooks\/claude$/;
export const RL_MARKER = '<!-- rein: the /rl command; `rein uninstall claude` removes this file -->';

export function claudeDir(env: InstallEnv): string {
  const d = env.env.CLAUDE_CONFIG_DIR;
  return d && d.length > 0 ? path.resolve(d) : path.join(env.userHome, '.claude');
}

export function rlCommandFile(): string {
  return [
    '---',
    'description: Rate the last answer for Rein (good, bad, 1-5, fix, undo, status)',
    'argument-hint: good | bad | 1-5 | fix "<correction>" | undo | status',
    '---',
    RL_MARKER,
    "Rein answers /rl itself through a UserPromptSubmit hook, so normally this text never reaches the model. If you are",
    'reading it, the Rein capture server did not answer. Reply with exactly this and nothing else:',
    '"Rein is not running, so /rl $ARGUMENTS was not recorded. Start the Rein app (or `rein serve`) and try again."',
    '',
  ].join('\n');
}

function isOurs(handler: unknown): boolean {
  return isRecord(handler) && handler.type === 'http' && typeof handler.url === 'string' && OUR_URL.test(handler.url);
}

/** Remove our handlers from every event; drop groups and events left empty by that. */
function withoutOurs(settings: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(settings);
  if (!isRecord(out.hooks)) return out;
  const hooks = out.hooks;
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) continue;
    const kept: unknown[] = [];
    for (const g of groups) {
      if (!isRecord(g) || !Array.isArray(g.hooks)) {
        kept.push(g);
        continue;
      }
      const handlers = g.hooks.filter((h) => !isOurs(h));
      if (handlers.length === g.hooks.length) kept.push(g);
      else if (handlers.length > 0) kept.push({ ...g, hooks: handlers });
    }
    if (kept.length > 0) hooks[event] = kept;
    else delete hooks[event];
  }
  if (Object.keys(hooks).length === 0) delete out.hooks;
  return out;
}

export function ourHandler(env: InstallEnv): Record<string, unknown> {
  const inSettings = env.options.claudeTokenFromEnv !== true;
  return {
    type: 'http',
    url: `http://127.0.0.1:${env.port}/hooks/claude`,
    headers: { Authorization: `Bearer ${inSettings ? env.token : '$' + TOKEN_ENV}` },
    ...(inSettings ? {} : { allowedEnvVars: [TOKEN_ENV] }),
    timeout: 10,
  };
}

/**
 * The `env` of settings.json that runs Claude Code on the local model through the proxy (Claude Code's settings
 * reference, "Environment variables": ANTHROPIC_BASE_URL; ANTHROPIC_AUTH_TOKEN is sent as `Authorization: Bearer`;
 * ANTHROPIC_MODEL and ANTHROPIC_SMALL_FAST_MODEL name the model for the main loop and for its small requests).
 */
export function localModelEnv(env: InstallEnv): Record<string, string> | null {
  const lm = env.options.localModel;
  if (lm === undefined) return null;
  return { ANTHROPIC_BASE_URL: `http://127.0.0.1:${lm.proxyPort}`, ANTHROPIC_AUTH_TOKEN: env.token, ANTHROPIC_MODEL: lm.model, ANTHROPIC_SMALL_FAST_MODEL: lm.model };
}

const OUR_BASE_URL = /^http:\/\/127\.0\.0\.1:\d+$/;

/** settings.json without the local-model env Rein wrote (recognised by its loopback base URL). */
function withoutOurEnv(settings: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(settings);
  if (!isRecord(out.env) || typeof out.env.ANTHROPIC_BASE_URL !== 'string' || !OUR_BASE_URL.test(out.env.ANTHROPIC_BASE_URL)) return out;
  for (const k of ['ANTHROPIC_BASE_URL', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_MODEL', 'ANTHROPIC_SMALL_FAST_MODEL']) delete out.env[k];
  if (Object.keys(out.env).length === 0) delete out.env;
  return out;
}

export function addOurs(settings: Record<string, unknown>, env: InstallEnv, events: readonly ClaudeEvent[]): Record<string, unknown> {
  const out = withoutOurs(withoutOurEnv(settings));
  const local = localModelEnv(env);
  if (local !== null) {
    if (out.env !== undefined && !isRecord(out.env)) throw new ReinError('conflict', '"env" in Claude settings is not an object');
    out.env = { ...((out.env as Record<string, unknown> | undefined) ?? {}), ...local };
  }
  if (out.hooks !== undefined && !isRecord(out.hooks)) throw new ReinError('conflict', '"hooks" in Claude settings is not an object');
  const hooks = (out.hooks ?? {}) as Record<string, unknown>;
  for (const event of events) {
    const groups = hooks[event];
    if (groups !== undefined && !Array.isArray(groups)) throw new ReinError('conflict', `hooks.${event} in Claude settings is not an array`);
    hooks[event] = [...((groups as unknown[] | undefined) ?? []), { hooks: [ourHandler(env)] }];
  }
  out.hooks = hooks;
  return out;
}

export const claudeIntegration: Integration = {
  agent: 'claude',
  detect: (env) => evidence('claude', [claudeDir(env)], env.env),
  plan(env, read) {
    const settingsPath = path.join(claudeDir(env), 'settings.json');
    const rlPath = path.join(claudeDir(env), 'commands', 'rl.md');
    const text = read(settingsPath);
    const before = parseJsonObject(text, settingsPath);
    // On the local model the proxy stores each turn (with its tokens): the hooks answer /rl only.
    const events = claudeEvents(env).filter((e) => env.options.localModel === undefined || e === 'UserPromptSubmit' || e === 'UserPromptExpansion');
    const after = addOurs(before, env, events);
    const existing = read(rlPath);
    if (existing !== null && !existing.includes(RL_MARKER)) {
      throw new ReinError('conflict', `${rlPath} exists and is not Rein's; rename it so /rl can be installed`, { detail: { path: rlPath } });
    }
    const edits: FileEdit[] = [
      {
        path: settingsPath,
        after: jsonText(text, before, after),
        // The literal token must not sit in a file others can read.
        ...(env.options.claudeTokenFromEnv && env.options.localModel === undefined ? {} : { mode: 0o600 }),
        summary:
          `http hooks on ${events.join(', ')} → 127.0.0.1:${env.port}/hooks/claude` +
          (env.options.localModel ? `; the model → Rein's proxy at 127.0.0.1:${env.options.localModel.proxyPort} (${env.options.localModel.model})` : ''),
      },
      { path: rlPath, after: rlCommandFile(), summary: 'the /rl slash command (without it Claude answers "Unknown command")' },
    ];
    return edits;
  },
  unplan(env, read) {
    const settingsPath = path.join(claudeDir(env), 'settings.json');
    const rlPath = path.join(claudeDir(env), 'commands', 'rl.md');
    const text = read(settingsPath);
    const edits: FileEdit[] = [];
    if (text !== null) {
      const before = parseJsonObject(text, settingsPath);
      edits.push({ path: settingsPath, after: jsonText(text, before, withoutOurs(withoutOurEnv(before))) ?? '{}\n', summary: "remove Rein's hooks (and its local-model env)" });
    }
    const rl = read(rlPath);
    if (rl !== null && rl.includes(RL_MARKER)) edits.push({ path: rlPath, after: null, summary: 'remove the /rl command' });
    return edits;
  },
  notes(env) {
    const lm = env.options.localModel;
    if (lm !== undefined) {
      return [
        `Claude Code now talks to Rein's proxy at http://127.0.0.1:${lm.proxyPort} (model ${lm.model}); keep \`rein serve-model\` (or the app's model server) running.`,
        'Each turn is stored by the proxy with its tokens, so rating trains on what your model sampled.',
        `The token is in ${path.join(claudeDir(env), 'settings.json')}, which is now mode 0600.`,
      ];
    }
    if (!env.options.claudeTokenFromEnv) {
      return [
        `The token is in ${path.join(claudeDir(env), 'settings.json')}, which is now mode 0600.`,
        'New Claude Code sessions load the hooks; in a session already open, run /hooks once.',
      ];
    }
    return [
      `Claude Code sends the token from $${TOKEN_ENV}. Add this line to your shell profile (it holds no secret; it reads the 0600 token file):`,
      `  export ${TOKEN_ENV}="$(cat '${env.rein.tokenPath}')"`,
      ...(env.env[TOKEN_ENV] ? [] : [`$${TOKEN_ENV} is not set in this shell yet: until it is, Rein answers Claude's hooks with 401 and captures nothing.`]),
      'Restart Claude Code (or open /hooks) so it loads the new hooks.',
    ];
  },
};
