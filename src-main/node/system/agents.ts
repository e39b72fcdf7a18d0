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
import { modelConfigJson, modelShape } from '../model-files/base-model.ts';
import { resolveTrainingConfig } from '../../common/training/presets.ts';
import { describeSource } from './model-discovery.ts';

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

/**
 * The tokens of each agent's first request (its system prompt and tool schemas, before any history), measured through
 * the proxy on the demo model's tokenizer: Claude Code 2.1.330 sent 10,375 (the loop e2e's exact context of a one-line
 * prompt; 2.1.197 sent 7,599) and Codex 0.169 11,788. That byte-level BPE has 720 tokens, so any larger vocabulary
 * spells the same text in fewer.
 */
export const AGENT_PROMPT_TOKENS: Record<'claude' | 'codex', number> = { claude: 10_375, codex: 11_788 };

/**
 * The context an agent needs from Rein's model server: its first request twice over (room for the history, tool
 * results and replies until the client compacts), rounded up to a power of two.
 */
export function agentContextSize(agent: 'claude' | 'codex'): number {
  return 2 ** Math.ceil(Math.log2(2 * AGENT_PROMPT_TOKENS[agent]));
}

/** The context a model was trained on (config.json max_position_embeddings, or the GGUF's context_length); null when unknown. */
export function trainedContext(modelId: string | null, env: NodeJS.ProcessEnv = process.env): number | null {
  if (modelId === null) return null;
  try {
    const n = modelConfigJson(describeSource(modelId, env).path)['max_position_embeddings'];
    return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null; // a model that cannot be read is named by serve-model, with its reason
  }
}

export interface ContextFit {
  /** The serving.contextSize to set, or null to keep the current one. */
  contextSize: number | null;
  notes: string[];
}

/**
 * What `--local-model` setup does to the context: raises serving.contextSize to what the agent needs (never lowers
 * it), and says when the active model was trained on shorter contexts than the agent's prompt, or when an upstream
 * (proxy.upstream) serves the agent instead of Rein's own model server.
 */
export function fitAgentContext(agent: 'claude' | 'codex', s: Settings, env: NodeJS.ProcessEnv = process.env): ContextFit {
  const need = agentContextSize(agent);
  const prompt = `${NAMES[agent]}'s first request (system prompt and tools) is about ${(AGENT_PROMPT_TOKENS[agent] / 1000).toFixed(1)}k tokens`;
  if (s['proxy.upstream'] !== null) {
    return { contextSize: null, notes: [`${prompt}: the upstream at ${s['proxy.upstream']} (proxy.upstream) must hold at least ${need} tokens of context.`] };
  }
  const notes: string[] = [];
  const current = s['serving.contextSize'];
  const contextSize = current < need ? need : null;
  notes.push(contextSize === null ? `serving.contextSize is ${current}, enough for ${NAMES[agent]} (${prompt}).` : `serving.contextSize ${current} → ${need}: ${prompt}.`);
  const trained = trainedContext(s['model.active'], env);
  if (trained !== null && trained < AGENT_PROMPT_TOKENS[agent]) {
    notes.push(
      `The active model (${s['model.active']}) was trained on contexts of ${trained} tokens, shorter than ${NAMES[agent]}'s prompt: it runs, ` +
        `but reads past its trained length and answers poorly. \`rein model list\` shows the models you have; one trained on ${need} tokens or more holds the agent.`,
    );
  }
  const limit = trainingLimit(s, env);
  if (limit !== null && limit < AGENT_PROMPT_TOKENS[agent]) {
    // training/data.ts encodeRound: a turn whose exact context is cut to fit trains its reply as text.
    const fitIt =
      agent === 'claude'
        ? 'To train them on-policy, run Claude Code with its own prompt replaced (`claude --system-prompt "Answer briefly." --tools ""` sends about 700 tokens and no tool schemas), or raise the limit'
        : 'To train them on-policy, raise the limit';
    notes.push(
      `${NAMES[agent]}'s prompt (about ${(AGENT_PROMPT_TOKENS[agent] / 1000).toFixed(1)}k tokens) is longer than the training limit of this model (${limit} tokens, training maxTokens), ` +
        `so its turns train as text (KTO), not on-policy (MIS-PO). ${fitIt} (rein settings set training.preset=custom 'training.custom={"maxTokens":${need}}'; a longer limit makes each round slower).`,
    );
  }
  return { contextSize, notes };
}

/** The longest sequence a round of the active model trains (its preset's maxTokens); null when the model or the custom fields cannot be read. */
function trainingLimit(s: Settings, env: NodeJS.ProcessEnv): number | null {
  if (s['model.active'] === null) return null;
  try {
    return resolveTrainingConfig(s['training.preset'], modelShape(describeSource(s['model.active'], env).path), s['training.custom']).maxTokens;
  } catch {
    return null; // the round names what is wrong with the model or training.custom
  }
}
