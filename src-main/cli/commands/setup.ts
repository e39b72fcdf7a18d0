// `rein setup <agent>`, `rein uninstall <agent>` and `rein hook …` (agent = claude | codex | openclaw).
// Interactive by default (shows the changes and asks); `--yes` for scripts; `--dry-run` lists the files that
// would change and writes nothing.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { BadInputError, ReinError } from '../../common/errors.ts';
import { claudeIntegration } from '../../node/install/claude.ts';
import { codexIntegration } from '../../node/install/codex.ts';
import { openclawIntegration } from '../../node/install/openclaw.ts';
import { AGENTS, describeChange, install, toChanges, uninstall } from '../../node/install/installer.ts';
import type { AgentName, InstallEnv, Integration } from '../../node/install/installer.ts';
import { registerCommand } from '../dispatch.ts';
import type { CommandContext } from '../dispatch.ts';
import { fitAgentContext, installEnv, localModelChoice } from '../../node/system/agents.ts';
import { restartNeeded } from '../../node/serving/serve-model-info.ts';

export const INTEGRATIONS: Record<AgentName, Integration> = { claude: claudeIntegration, codex: codexIntegration, openclaw: openclawIntegration };

function agentArg(ctx: CommandContext): Integration {
  const a = ctx.args[0];
  if (!AGENTS.includes(a as AgentName)) throw new BadInputError(`agent must be one of ${AGENTS.join(', ')}, not "${a ?? ''}"`, 'agent');
  return INTEGRATIONS[a as AgentName];
}

function portOption(ctx: CommandContext, name: string): number | null {
  const v = ctx.options[name];
  if (typeof v !== 'string') return null;
  const port = Number(v);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new BadInputError(`--${name} must be a port number, not ${v}`, name);
  return port;
}

async function envFor(ctx: CommandContext): Promise<InstallEnv> {
  const env = installEnv(ctx.home, ctx.io.env);
  env.port = portOption(ctx, 'port') ?? env.port;
  const options: InstallEnv['options'] = { claudeTokenFromEnv: ctx.options['token-from-env'] === true };
  if (ctx.options['local-model'] === true) {
    if (ctx.args[0] === 'openclaw') throw new BadInputError('--local-model is for claude and codex (OpenClaw already talks to an OpenAI-compatible endpoint: point it at the proxy)', 'local-model');
    // The proxy stores a reply as on-policy when it knows the model that wrote it: proxy.baseModelName names it.
    const choice = localModelChoice(await (await ctx.api()).call('getSettings', {}));
    options.localModel = { proxyPort: portOption(ctx, 'proxy-port') ?? choice.proxyPort, model: typeof ctx.options.model === 'string' ? ctx.options.model : choice.model };
  }
  return { ...env, options };
}

/** On the local model: Rein's model server gets a context that holds the agent's prompt (agents.ts fitAgentContext). */
async function fitContext(ctx: CommandContext, integ: Integration, apply: boolean): Promise<string[]> {
  if (ctx.options['local-model'] !== true || (integ.agent !== 'claude' && integ.agent !== 'codex')) return [];
  const api = await ctx.api();
  const fit = fitAgentContext(integ.agent, await api.call('getSettings', {}), ctx.io.env);
  if (fit.contextSize === null || !apply) return fit.notes;
  const settings = await api.call('setSettings', { values: { 'serving.contextSize': fit.contextSize } });
  const restart = restartNeeded(ctx.home, settings);
  return restart === null ? fit.notes : [...fit.notes, restart];
}

async function confirm(ctx: CommandContext, question: string): Promise<boolean> {
  if (ctx.options.yes === true) return true;
  if (!ctx.io.stdinIsTTY) throw new BadInputError('not a terminal: pass --yes to apply, or --dry-run to see the changes', 'yes');
  const rl = createInterface({ input: ctx.io.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

const SETUP_OPTIONS = {
  yes: { type: 'boolean' as const, short: 'y', help: 'apply without asking' },
  'dry-run': { type: 'boolean' as const, help: 'print which files would change and write nothing' },
  port: { type: 'string' as const, help: 'capture server port to point the agent at (default: the running one, else 7433)' },
  'token-from-env': { type: 'boolean' as const, help: 'claude: send the token from $REIN_TOKEN (set in your shell profile) instead of writing it into settings.json (made 0600)' },
  'local-model': { type: 'boolean' as const, help: "claude, codex: run the agent on your local model through Rein's proxy (rein serve-model), which stores each turn with its tokens; raises serving.contextSize to hold the agent's prompt" },
  'proxy-port': { type: 'string' as const, help: 'with --local-model: the proxy port to point the agent at (default: the proxy.port setting)' },
  model: { type: 'string' as const, help: 'with --local-model: the model name the agent sends (default: the proxy.baseModelName setting, else rein-local)' },
};

registerCommand({
  name: 'setup',
  summary: 'Connect an agent (claude, codex, openclaw) to Rein.',
  usage: 'rein setup <claude|codex|openclaw> [--yes] [--dry-run] [--port N] [--token-from-env] [--local-model [--proxy-port N] [--model NAME]]',
  args: [1, 1],
  options: SETUP_OPTIONS,
  async run(ctx) {
    const integ = agentArg(ctx);
    const env = await envFor(ctx);
    const found = integ.detect(env);
    if (!found.installed) ctx.io.stderr(`note: ${integ.agent} does not look installed (no binary on PATH, no config dir); setting it up anyway.\n`);
    const planned = toChanges(integ.plan(env, (f) => readText(f)));
    const dry = ctx.options['dry-run'] === true;
    if (planned.length === 0) {
      const notes = dry ? [] : await fitContext(ctx, integ, true);
      ctx.print([`${integ.agent}: already set up, nothing to change.`, ...notes].join('\n'), { agent: integ.agent, changes: [], notes });
      return 0;
    }
    ctx.io.stderr(planned.map((c) => `  ${describeChange(c)}\n`).join(''));
    if (dry) {
      const notes = await fitContext(ctx, integ, false);
      ctx.print([`${integ.agent}: dry run, nothing written.`, ...notes].join('\n'), { agent: integ.agent, dryRun: true, changes: planned.map(describeChange), notes });
      return 0;
    }
    if (!(await confirm(ctx, `Apply these changes for ${integ.agent}?`))) return 1;
    const r = await install(integ, env, { dryRun: false, say: (l) => ctx.io.stderr(l + '\n') });
    const notes = [...integ.notes(env), ...(await fitContext(ctx, integ, true))];
    ctx.print([`${integ.agent}: set up (backup in ${r.backupDir}).`, ...notes].join('\n'), {
      agent: integ.agent,
      backupDir: r.backupDir,
      changes: r.changes.map(describeChange),
      notes,
    });
    return 0;
  },
});

registerCommand({
  name: 'uninstall',
  summary: "Remove Rein from an agent's config, restoring the original files when untouched since.",
  usage: 'rein uninstall <claude|codex|openclaw> [--yes] [--dry-run]',
  args: [1, 1],
  options: { yes: SETUP_OPTIONS.yes, 'dry-run': SETUP_OPTIONS['dry-run'], port: SETUP_OPTIONS.port },
  async run(ctx) {
    const integ = agentArg(ctx);
    const env = await envFor(ctx);
    const preview = uninstall(integ, env, { dryRun: true });
    if (preview.changes.length === 0) {
      ctx.print(`${integ.agent}: Rein is not installed there; nothing to change.`, { agent: integ.agent, changes: [] });
      return 0;
    }
    ctx.io.stderr(preview.changes.map((c) => `  ${describeChange(c)}\n`).join(''));
    if (ctx.options['dry-run'] === true) {
      ctx.print(`${integ.agent}: dry run, nothing written.`, { agent: integ.agent, dryRun: true, changes: preview.changes.map(describeChange) });
      return 0;
    }
    if (!(await confirm(ctx, `Remove Rein from ${integ.agent}?`))) return 1;
    const r = uninstall(integ, env, { dryRun: false });
    ctx.print(`${integ.agent}: removed (backup of the files before removal in ${r.backupDir}).`, {
      agent: integ.agent,
      backupDir: r.backupDir,
      changes: r.changes.map(describeChange),
    });
    return 0;
  },
});

registerCommand({
  name: 'hook',
  summary: 'Run an agent hook (what Codex starts): codex-notify <json> | codex-hook (JSON on stdin).',
  usage: 'rein hook <codex-notify|codex-hook> [json]',
  args: [1, 2],
  async run(ctx) {
    const { runHook } = await import('./hook.ts');
    return runHook(ctx.args, { stdin: ctx.io.stdin, stdout: ctx.io.stdout, env: ctx.io.env });
  },
});

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ReinError('internal', `cannot read ${file}: ${(e as Error).message}`);
  }
}
