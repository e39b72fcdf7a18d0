// The wizard's agent step: which agents are installed, what connecting one would change (the installer's dry run),
// and connecting it (the same installer `rein setup <agent> --yes` runs, with its backups).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { SETTINGS } from '../../common/config.ts';
import type { Settings } from '../../common/config.ts';
import { BadInputError } from '../../common/errors.ts';
import type { AgentConnectResult, AgentId, AgentInfo, AgentPlan, FileChangeView } from '../../common/system.ts';
import type { ReinHome } from '../home.ts';
import { readOrCreateToken } from '../home.ts';
import { claudeIntegration } from '../install/claude.ts';
import { codexIntegration } from '../install/codex.ts';
import { HOOK_ENTRY } from '../integrations/codex/notify.ts';
import { openclawIntegration } from '../install/openclaw.ts';
import { install, toChanges } from '../install/installer.ts';
import type { Change, InstallEnv, Integration } from '../install/installer.ts';
import { readState } from '../install/fs-safe.ts';
import { readServerInfo } from '../capture-server/info.ts';
import { resourceDir } from '../resources.ts';

const INTEGRATIONS: Record<AgentId, Integration> = { claude: claudeIntegration, codex: codexIntegration, openclaw: openclawIntegration };
const NAMES: Record<AgentId, string> = { claude: 'Claude Code', codex: 'Codex', openclaw: 'OpenClaw' };
/** The installer's own reader: a file's text, or null when it does not exist. */
const readFileText = (file: string): string | null => readState(file).bytes?.toString('utf8') ?? null;

const PLUGIN_DIR = resourceDir('openclaw-plugin');

/**
 * The Node that hooks run with. Inside Electron `process.execPath` is the Electron binary, which would start the app
 * rather than the hook, so the bundled Node 24 of the checkout is used there (TOOLCHAIN.md: hooks must never start on
 * an older system node).
 */
function hookNode(): string {
  if (process.versions.electron === undefined) return process.execPath;
  const bundled = path.resolve(import.meta.dirname, '../../../node_modules/node/bin/node');
  return existsSync(bundled) ? bundled : process.execPath;
}

export function installEnv(home: ReinHome, env: NodeJS.ProcessEnv = process.env): InstallEnv {
  return {
    userHome: env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir(),
    env,
    rein: home,
    port: readServerInfo(home)?.port ?? SETTINGS['server.port'].default,
    token: readOrCreateToken(home),
    hookCommand: [hookNode(), HOOK_ENTRY],
    pluginDir: PLUGIN_DIR,
    options: {},
  };
}

export function changeView(c: Change): FileChangeView {
  return {
    action: c.before === null ? 'create' : c.after === null ? 'delete' : 'modify',
    path: c.path,
    summary: c.summary,
    mode: c.after === null ? null : c.mode.toString(8).padStart(4, '0'),
  };
}

export function detectAgents(home: ReinHome, env: NodeJS.ProcessEnv = process.env, local: LocalModelChoice | null = null): AgentInfo[] {
  const ie = installEnv(home, env);
  return (Object.keys(INTEGRATIONS) as AgentId[]).map((agent) => {
    const integ = INTEGRATIONS[agent];
    const found = integ.detect(ie);
    let connected = false;
    let error: string | null = null;
    try {
      connected = toChanges(integ.plan(ie, readFileText)).length === 0;
      // Connected on the local model (through the proxy) counts too.
      if (!connected && local !== null && agent !== 'openclaw') connected = toChanges(integ.plan(envWith(home, agent, env, local), readFileText)).length === 0;
    } catch (e) {
      error = (e as Error).message;
    }
    return { agent, name: NAMES[agent], installed: found.installed, evidence: found.evidence, connected, error };
  });
}

/** Run the agent on the local model through Rein's proxy (installer.ts InstallEnv.options.localModel). */
export interface LocalModelChoice {
  proxyPort: number;
  model: string;
}

/** The local-model choice from the settings: the proxy's port, and the model name that makes its turns on-policy. */
export function localModelChoice(settings: Pick<Settings, 'proxy.port' | 'proxy.baseModelName'>): LocalModelChoice {
  return { proxyPort: settings['proxy.port'], model: settings['proxy.baseModelName'] ?? 'rein-local' };
}

function envWith(home: ReinHome, agent: AgentId, env: NodeJS.ProcessEnv, local: LocalModelChoice | null): InstallEnv {
  const ie = installEnv(home, env);
  if (local === null) return ie;
  if (agent === 'openclaw') throw new BadInputError("running on the local model is for Claude Code and Codex (point OpenClaw's provider at the proxy)", 'localModel');
  return { ...ie, options: { ...ie.options, localModel: local } };
}

export function planAgent(home: ReinHome, agent: AgentId, env: NodeJS.ProcessEnv = process.env, local: LocalModelChoice | null = null): AgentPlan {
  const ie = envWith(home, agent, env, local);
  return { agent, changes: toChanges(INTEGRATIONS[agent].plan(ie, readFileText)).map(changeView), backupsDir: home.backupsDir };
}

export async function connectAgent(home: ReinHome, agent: AgentId, env: NodeJS.ProcessEnv = process.env, local: LocalModelChoice | null = null): Promise<AgentConnectResult> {
  const ie = envWith(home, agent, env, local);
  const integ = INTEGRATIONS[agent];
  const said: string[] = [];
  const r = await install(integ, ie, { dryRun: false, say: (l) => said.push(l) });
  return { agent, changes: r.changes.map(changeView), backupDir: r.backupDir, notes: [...said, ...integ.notes(ie)] };
}
