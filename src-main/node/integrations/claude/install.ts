// `rein setup claude`: `type:"http"` hooks in ~/.claude/settings.json and the `/rl` command file.
// The token: by default the literal token goes into the header and settings.json is made 0600, so a one-click
// install works at once, with no shell-profile edit and no restart of the user's shell (verified against the real
// Claude Code 2.1 in e2e/agents). With --token-from-env the header is `Bearer $REIN_TOKEN` instead: Claude Code
// interpolates `$VAR` in an http hook's header values, but only for variables listed in that hook's
// `allowedEnvVars` (code.claude.com settings reference, "headers" / "allowedEnvVars"; others become empty strings),
// and the user's shell profile reads the 0600 token file.
import path from 'node:path';
import { ReinError } from '../../../common/errors.ts';
import { evidence } from '../shared/detect.ts';
import type { FileEdit, InstallEnv, Integration } from '../shared/installer.ts';
import { jsonText, parseJsonObject } from '../shared/json-file.ts';
import { isRecord } from '../shared/text.ts';

export const CLAUDE_EVENTS = ['Stop', 'SubagentStop', 'UserPromptSubmit', 'UserPromptExpansion'] as const;
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

export function addOurs(settings: Record<string, unknown>, env: InstallEnv): Record<string, unknown> {
  const out = withoutOurs(settings);
  if (out.hooks !== undefined && !isRecord(out.hooks)) throw new ReinError('conflict', '"hooks" in Claude settings is not an object');
  const hooks = (out.hooks ?? {}) as Record<string, unknown>;
  for (const event of CLAUDE_EVENTS) {
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
    const after = addOurs(before, env);
    const existing = read(rlPath);
    if (existing !== null && !existing.includes(RL_MARKER)) {
      throw new ReinError('conflict', `${rlPath} exists and is not Rein's; rename it so /rl can be installed`, { detail: { path: rlPath } });
    }
    const edits: FileEdit[] = [
      {
        path: settingsPath,
        after: jsonText(text, before, after),
        // The literal token must not sit in a file others can read.
        ...(env.options.claudeTokenFromEnv ? {} : { mode: 0o600 }),
        summary: `http hooks on ${CLAUDE_EVENTS.join(', ')} → 127.0.0.1:${env.port}/hooks/claude`,
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
      edits.push({ path: settingsPath, after: jsonText(text, before, withoutOurs(before)) ?? '{}\n', summary: "remove Rein's hooks" });
    }
    const rl = read(rlPath);
    if (rl !== null && rl.includes(RL_MARKER)) edits.push({ path: rlPath, after: null, summary: 'remove the /rl command' });
    return edits;
  },
  notes(env) {
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
