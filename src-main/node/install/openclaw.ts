// `rein setup openclaw`: load the plugin from resources/openclaw-plugin (`plugins.load.paths`) and enable it with
// conversation access (non-bundled plugins need `plugins.entries.<id>.hooks.allowConversationAccess: true` to
// receive agent_end; notes/REAL_CLIENTS.md). The plugin config holds the capture URL and the secret, so the
// config file is made 0600. Config path: $OPENCLAW_CONFIG_PATH, else $OPENCLAW_STATE_DIR/openclaw.json, else
// ~/.openclaw/openclaw.json.
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import { evidence } from './detect.ts';
import type { InstallEnv, Integration } from './installer.ts';
import { jsonText, parseJsonObject } from './json-file.ts';
import { isRecord } from '../integrations/shared/text.ts';

export const PLUGIN_ID = 'rein';

export function openclawConfigPath(env: InstallEnv): string {
  if (env.env.OPENCLAW_CONFIG_PATH) return path.resolve(env.env.OPENCLAW_CONFIG_PATH);
  const state = env.env.OPENCLAW_STATE_DIR ? path.resolve(env.env.OPENCLAW_STATE_DIR) : path.join(env.userHome, '.openclaw');
  return path.join(state, 'openclaw.json');
}

function obj(parent: Record<string, unknown>, key: string, where: string): Record<string, unknown> {
  const v = parent[key];
  if (v === undefined) return (parent[key] = {}) as Record<string, unknown>;
  if (!isRecord(v)) throw new ReinError('conflict', `${where}.${key} in the OpenClaw config is not an object`);
  return v;
}

export function addPlugin(config: Record<string, unknown>, env: InstallEnv): Record<string, unknown> {
  const out = structuredClone(config);
  const plugins = obj(out, 'plugins', '');
  const load = obj(plugins, 'load', 'plugins');
  const paths = load.paths ?? [];
  if (!Array.isArray(paths)) throw new ReinError('conflict', 'plugins.load.paths in the OpenClaw config is not an array');
  load.paths = paths.includes(env.pluginDir) ? paths : [...paths, env.pluginDir];
  const entries = obj(plugins, 'entries', 'plugins');
  const prev = isRecord(entries[PLUGIN_ID]) ? (entries[PLUGIN_ID] as Record<string, unknown>) : {};
  entries[PLUGIN_ID] = {
    ...prev,
    enabled: true,
    hooks: { ...(isRecord(prev.hooks) ? prev.hooks : {}), allowConversationAccess: true },
    config: { ...(isRecord(prev.config) ? prev.config : {}), captureUrl: `http://127.0.0.1:${env.port}`, secret: env.token },
  };
  return out;
}

export function removePlugin(config: Record<string, unknown>, env: InstallEnv): Record<string, unknown> {
  const out = structuredClone(config);
  if (!isRecord(out.plugins)) return out;
  const plugins = out.plugins;
  if (isRecord(plugins.load) && Array.isArray(plugins.load.paths)) {
    plugins.load.paths = plugins.load.paths.filter((p) => p !== env.pluginDir);
    if ((plugins.load.paths as unknown[]).length === 0) delete plugins.load.paths;
    if (Object.keys(plugins.load).length === 0) delete plugins.load;
  }
  if (isRecord(plugins.entries)) {
    delete plugins.entries[PLUGIN_ID];
    if (Object.keys(plugins.entries).length === 0) delete plugins.entries;
  }
  if (Object.keys(plugins).length === 0) delete out.plugins;
  return out;
}

export const openclawIntegration: Integration = {
  agent: 'openclaw',
  detect: (env) => evidence('openclaw', [path.dirname(openclawConfigPath(env))], env.env),
  plan(env, read) {
    const file = openclawConfigPath(env);
    const text = read(file);
    const before = parseJsonObject(text, file);
    return [{ path: file, after: jsonText(text, before, addPlugin(before, env)), mode: 0o600, summary: `load and enable the Rein plugin (${env.pluginDir})` }];
  },
  unplan(env, read) {
    const file = openclawConfigPath(env);
    const text = read(file);
    if (text === null) return [];
    const before = parseJsonObject(text, file);
    return [{ path: file, after: jsonText(text, before, removePlugin(before, env)) ?? '{}\n', summary: 'remove the Rein plugin' }];
  },
  notes: (env) => [
    `The plugin's config (capture URL and secret) is in ${openclawConfigPath(env)}, now mode 0600.`,
    'Restart the OpenClaw gateway to load the plugin. Add sender ids to plugins.entries.rein.config.raters / admins to let',
    'others rate any reply, or run /rl train, rollback and reset from a chat.',
  ],
};
