// `rein setup codex`: the top-level `notify` in $CODEX_HOME/config.toml (chained to the user's previous one,
// saved in the Rein home), Stop and UserPromptSubmit entries in $CODEX_HOME/hooks.json, and hook trust.
// Codex silently skips untrusted user hooks (notes/REAL_CLIENTS.md); trust is persisted by asking
// `codex app-server` for each hook's key and current hash (`hooks/list`) and writing
// `[hooks.state."<key>"] trusted_hash = "<hash>"` into config.toml.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import { evidence, onPath } from './detect.ts';
import type { FileEdit, InstallEnv, Integration } from './installer.ts';
import { jsonText, parseJsonObject } from './json-file.ts';
import { isRecord } from '../integrations/shared/text.ts';
import { chainPath } from '../integrations/codex/notify.ts';
import { findTopLevelKey, formatStringArray, parseStringArray, removeHookTrust, removeTables, setHookTrust, setTable, setTopLevelKey } from './codex-toml.ts';

export const CODEX_HOOK_EVENTS = ['Stop', 'UserPromptSubmit'] as const;

export function codexHome(env: InstallEnv): string {
  const d = env.env.CODEX_HOME;
  return d && d.length > 0 ? path.resolve(d) : path.join(env.userHome, '.codex');
}

const shq = (s: string) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

export function notifyArgv(env: InstallEnv): string[] {
  return [...env.hookCommand, 'codex-notify'];
}
export function hookCommandLine(env: InstallEnv): string {
  return [...env.hookCommand, 'codex-hook'].map(shq).join(' ');
}

// hook.ts was the entry before hook-entry.mjs; an install made by either is ours.
const isOurNotify = (argv: string[]) => argv.includes('codex-notify') && argv.some((a) => /hook(-entry)?(\.ts|\.mjs)?$|rein/.test(a));
const isOurHook = (h: unknown) => isRecord(h) && h.type === 'command' && typeof h.command === 'string' && /\bcodex-hook$/.test(h.command);

interface Chain {
  previous: string[] | null;
  trustedKeys?: string[];
  /** With --local-model: the user's own top-level `model` and `model_provider` values (TOML text), to put back. */
  local?: { model: string | null; provider: string | null };
}

/** The provider Rein writes for --local-model (Codex's config reference, "model_providers"). */
const PROVIDER_HEADER = '[model_providers.rein]';

function providerTable(env: InstallEnv, proxyPort: number): string[] {
  return [
    'name = "Rein (local model)"',
    `base_url = ${JSON.stringify(`http://127.0.0.1:${proxyPort}/v1`)}`,
    // Codex speaks only the Responses API now; the proxy serves it (serving/responses.ts).
    'wire_api = "responses"',
    `experimental_bearer_token = ${JSON.stringify(env.token)}`,
  ];
}

function readChainText(text: string | null): Chain | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Chain;
    return isRecord(v) ? v : null;
  } catch {
    return null;
  }
}

function withoutOurHooks(obj: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(obj);
  if (!isRecord(out.hooks)) return out;
  for (const [ev, groups] of Object.entries(out.hooks)) {
    if (!Array.isArray(groups)) continue;
    const kept = groups
      .map((g) => (isRecord(g) && Array.isArray(g.hooks) ? { ...g, hooks: g.hooks.filter((h) => !isOurHook(h)) } : g))
      .filter((g, i) => !(isRecord(g) && Array.isArray(g.hooks) && g.hooks.length === 0 && (groups[i] as { hooks: unknown[] }).hooks.length > 0));
    if (kept.length > 0) out.hooks[ev] = kept;
    else delete out.hooks[ev];
  }
  if (Object.keys(out.hooks).length === 0) delete out.hooks;
  return out;
}

function hooksEdit(env: InstallEnv, read: (file: string) => string | null, hooksPath: string, events: readonly string[]): FileEdit {
  const hooksText = read(hooksPath);
  const before = parseJsonObject(hooksText, hooksPath);
  const after = withoutOurHooks(before);
  if (after.hooks !== undefined && !isRecord(after.hooks)) throw new ReinError('conflict', `"hooks" in ${hooksPath} is not an object`);
  const hooks = (after.hooks ?? {}) as Record<string, unknown[]>;
  for (const ev of events) {
    hooks[ev] = [...(hooks[ev] ?? []), { hooks: [{ type: 'command', command: hookCommandLine(env), timeout: 10 }] }];
  }
  after.hooks = hooks;
  return { path: hooksPath, after: jsonText(hooksText, before, after), summary: `command hooks on ${events.join(', ')}` };
}

/**
 * --local-model: Codex's model provider becomes Rein's proxy, which stores each turn with its tokens, so there is
 * no notify and no Stop hook (the turn would be stored twice); UserPromptSubmit stays for /rl. The token is the
 * provider's bearer token, so config.toml is made 0600.
 */
function planLocal(env: InstallEnv, read: (file: string) => string | null, config: string, configPath: string, hooksPath: string, lm: { proxyPort: number; model: string }): FileEdit[] {
  const saved = readChainText(read(chainPath(env.rein)));
  const value = (key: string) => {
    const span = findTopLevelKey(config, key);
    return span === null ? null : span.value;
  };
  const ours = value('model_provider') === '"rein"';
  const chain: Chain = { previous: saved?.previous ?? null, local: ours && saved?.local ? saved.local : { model: value('model'), provider: value('model_provider') } };
  let next = config;
  // Switching from the hook install: its notify goes back to the user's own, which the proxy now stands beside.
  const notify = findTopLevelKey(config, 'notify');
  if (notify !== null && isOurNotify(parseStringArray(notify.value))) {
    next = setTopLevelKey(next, 'notify', saved?.previous ? formatStringArray(saved.previous) : null);
    chain.previous = null;
  }
  next = setTopLevelKey(next, 'model_provider', '"rein"');
  next = setTopLevelKey(next, 'model', JSON.stringify(lm.model));
  next = setTable(next, PROVIDER_HEADER, providerTable(env, lm.proxyPort));
  return [
    { path: chainPath(env.rein), after: JSON.stringify(chain, null, 2) + '\n', mode: 0o600, summary: 'the model settings Rein replaced' },
    { path: configPath, after: next, mode: 0o600, summary: `model provider → Rein's proxy at 127.0.0.1:${lm.proxyPort} (${lm.model}, wire_api = "responses")` },
    hooksEdit(env, read, hooksPath, ['UserPromptSubmit']),
  ];
}

const integration: Integration = {
  agent: 'codex',
  detect: (env) => evidence('codex', [codexHome(env)], env.env),
  plan(env, read) {
    const configPath = path.join(codexHome(env), 'config.toml');
    const hooksPath = path.join(codexHome(env), 'hooks.json');
    const config = read(configPath) ?? '';
    const span = findTopLevelKey(config, 'notify');
    const current = span ? parseStringArray(span.value) : null;
    const edits: FileEdit[] = [];
    const lm = env.options.localModel;
    if (lm !== undefined) return planLocal(env, read, config, configPath, hooksPath, lm);
    if (current === null || !isOurNotify(current)) {
      // Save the user's notify before replacing it: `rein hook codex-notify` runs it with the same argument.
      const chain: Chain = { previous: current };
      edits.push({ path: chainPath(env.rein), after: JSON.stringify(chain, null, 2) + '\n', mode: 0o600, summary: 'the notify command Rein chains to' });
    }
    edits.push({
      path: configPath,
      after: setTopLevelKey(config, 'notify', formatStringArray(notifyArgv(env))),
      summary: current ? `notify → rein (chains to: ${current.join(' ')})` : 'notify → rein',
    });
    edits.push(hooksEdit(env, read, hooksPath, CODEX_HOOK_EVENTS));
    return edits;
  },
  unplan(env, read) {
    const configPath = path.join(codexHome(env), 'config.toml');
    const hooksPath = path.join(codexHome(env), 'hooks.json');
    const chain = readChainText(read(chainPath(env.rein)));
    const edits: FileEdit[] = [];
    const config = read(configPath);
    if (config !== null) {
      const span = findTopLevelKey(config, 'notify');
      let next = config;
      if (span && isOurNotify(parseStringArray(span.value))) {
        next = setTopLevelKey(config, 'notify', chain?.previous ? formatStringArray(chain.previous) : null);
      }
      next = removeHookTrust(next, chain?.trustedKeys ?? []);
      if (findTopLevelKey(next, 'model_provider')?.value === '"rein"') {
        next = setTopLevelKey(next, 'model_provider', chain?.local?.provider ?? null);
        next = setTopLevelKey(next, 'model', chain?.local?.model ?? null);
      }
      next = removeTables(next, [PROVIDER_HEADER]);
      edits.push({ path: configPath, after: next, summary: 'restore notify, remove hook trust' });
    }
    const hooksText = read(hooksPath);
    if (hooksText !== null) {
      const before = parseJsonObject(hooksText, hooksPath);
      edits.push({ path: hooksPath, after: jsonText(hooksText, before, withoutOurHooks(before)) ?? '{}\n', summary: "remove Rein's hooks" });
    }
    if (chain !== null) edits.push({ path: chainPath(env.rein), after: null, summary: 'forget the saved notify' });
    return edits;
  },
  async afterInstall(env, read, say) {
    const codex = onPath('codex', env.env);
    if (codex === null) {
      say('codex is not on PATH, so hook trust was not written: Codex will ask you to trust the new hooks (run `codex`, then /hooks).');
      return [];
    }
    let hooks: { key: string; hash: string }[];
    try {
      hooks = (await listHooks(codex, env)).filter((h) => h.ours);
    } catch (e) {
      say(`could not ask codex app-server for hook hashes (${(e as Error).message}); trust the hooks in Codex with /hooks.`);
      return [];
    }
    if (hooks.length === 0) {
      say('codex app-server listed no Rein hooks; trust them in Codex with /hooks.');
      return [];
    }
    const configPath = path.join(codexHome(env), 'config.toml');
    let config = read(configPath) ?? '';
    for (const h of hooks) config = setHookTrust(config, h.key, h.hash);
    const chain = readChainText(read(chainPath(env.rein))) ?? { previous: null };
    chain.trustedKeys = hooks.map((h) => h.key);
    say(`trusted ${hooks.length} Rein hook(s) in ${configPath}.`);
    return [
      { path: configPath, after: config, summary: 'trust the Rein hooks (hooks.state)' },
      { path: chainPath(env.rein), after: JSON.stringify(chain, null, 2) + '\n', mode: 0o600, summary: 'remember the trusted hook keys' },
    ];
  },
  notes(env) {
    const lm = env.options.localModel;
    if (lm !== undefined) {
      return [
        `Codex now uses Rein's proxy at http://127.0.0.1:${lm.proxyPort}/v1 as its model provider (model ${lm.model}); keep \`rein serve-model\` running.`,
        'Each turn is stored by the proxy with its tokens. Codex skips hooks you have not trusted: if it asks, trust the Rein UserPromptSubmit hook (/rl).',
      ];
    }
    return [
      `Codex runs ${notifyArgv(env).join(' ')} after each turn; your previous notify, if any, still runs.`,
      'Codex skips hooks you have not trusted: if it asks, trust the two Rein hooks (Stop, UserPromptSubmit).',
    ];
  },
};

/** The config.toml editor's refusals name `config.toml`; the user needs the file's whole path. */
function withPath(env: InstallEnv, e: unknown): unknown {
  if (!(e instanceof ReinError) || !e.message.startsWith('config.toml: ')) return e;
  const file = path.join(codexHome(env), 'config.toml');
  return new ReinError(e.code, file + e.message.slice('config.toml'.length), { detail: { path: file }, cause: e });
}

export const codexIntegration: Integration = {
  ...integration,
  plan(env, read) {
    try {
      return integration.plan(env, read);
    } catch (e) {
      throw withPath(env, e);
    }
  },
  unplan(env, read) {
    try {
      return integration.unplan(env, read);
    } catch (e) {
      throw withPath(env, e);
    }
  },
  afterInstall: (env, read, say) =>
    integration.afterInstall!(env, read, say).catch((e: unknown) => {
      throw withPath(env, e);
    }),
};

/**
 * `codex app-server` speaks JSON-RPC, one JSON message per line on stdio: `initialize` (with clientInfo), the
 * `initialized` notification, then `hooks/list {cwds}`; each listed hook carries its `key` and `currentHash`.
 */
export async function listHooks(codex: string, env: InstallEnv, timeoutMs = 20_000): Promise<{ key: string; hash: string; ours: boolean }[]> {
  const child = spawn(codex, ['app-server'], {
    env: { ...env.env, CODEX_HOME: codexHome(env) } as NodeJS.ProcessEnv,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const send = (m: unknown) => child.stdin.write(JSON.stringify(m) + '\n');
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
      let buf = '';
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`codex app-server exited (${code})`));
      });
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString('utf8');
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          let msg: unknown;
          try {
            msg = JSON.parse(line);
          } catch {
            continue;
          }
          if (!isRecord(msg)) continue;
          if (msg.id === 1) {
            send({ method: 'initialized' });
            send({ id: 2, method: 'hooks/list', params: { cwds: [env.userHome] } });
          } else if (msg.id === 2) {
            clearTimeout(timer);
            if (msg.error !== undefined) reject(new Error(JSON.stringify(msg.error)));
            else resolve(collectHooks(msg.result));
          }
        }
      });
      send({ id: 1, method: 'initialize', params: { clientInfo: { name: 'rein', title: 'Rein', version: '0.1.0' } } });
    });
  } finally {
    child.kill();
  }
}

/** Every object in the answer with a string `key` and `currentHash`; ours when it mentions the Rein hook command. */
export function collectHooks(result: unknown): { key: string; hash: string; ours: boolean }[] {
  const out: { key: string; hash: string; ours: boolean }[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (isRecord(v)) {
      if (typeof v.key === 'string' && typeof v.currentHash === 'string') {
        out.push({ key: v.key, hash: v.currentHash, ours: /codex-hook/.test(JSON.stringify(v)) });
      }
      Object.values(v).forEach(walk);
    }
  };
  walk(result);
  return out;
}
