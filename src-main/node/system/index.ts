// The setup wizard's verbs (common/api.ts: detectAgents … sendTestTurn) as one thin service over the installers,
// the model folders, the demo model and the capture server. compose.ts hands them to the core (core.ts CoreOptions.wizard).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { BadInputError, ConflictError, NotAvailableError, NotFoundError, ReinError } from '../../common/errors.ts';
import type { LocalModel } from '../../common/system.ts';
import type { ReinHome } from '../home.ts';
import type { WizardDeps, WizardHandlers } from '../core/core.ts';
import { readOrCreateToken } from '../home.ts';
import { SafetensorsFile } from '../engine/safetensors.ts';
import { readServerInfo } from '../capture-server/info.ts';
import { installSmallLm } from '../demo/small-lm.ts';
import { connectAgent, detectAgents, fitAgentContext, localModelChoice, planAgent } from './agents.ts';
import { detectHardware } from './hardware.ts';
import { describeHfDir, describeSource, discoverModels } from './model-discovery.ts';


export function demoModelDir(home: ReinHome): string {
  return path.join(home.modelsDir, 'demo');
}

/**
 * A folder the user typed for the model search: ~ is their home; any other relative path is refused (it would mean
 * the server's working folder), and so is a path that is not a folder, with the path in the message ("Look there"
 * used to answer a typo with an unchanged list).
 */
/**
 * Every .safetensors file's header read and checked (its length, its JSON, each tensor's offsets against the file's
 * size), so that a header claiming a terabyte or a truncated shard is refused here by name, not in the middle of a
 * training round (issue #19). Headers only: the weights themselves are not read.
 */
function checkWeights(dir: string, verb: string, field: string): void {
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.safetensors'))) {
    try {
      SafetensorsFile.open(path.join(dir, f)).close();
    } catch (e) {
      throw new BadInputError(`${verb}: Rein cannot train ${dir}: ${(e as Error).message}`, field);
    }
  }
}

function pickedFolder(folder: string, env: NodeJS.ProcessEnv): string {
  const home = env.HOME ?? homedir();
  const abs = folder === '~' ? home : folder.startsWith('~/') ? path.join(home, folder.slice(2)) : folder;
  if (!path.isAbsolute(abs)) throw new BadInputError(`discoverModels: ${folder} is not an absolute path (start it with / or ~/)`, 'folders');
  const st = statSync(abs, { throwIfNoEntry: false });
  if (!st) throw new BadInputError(`discoverModels: there is no folder at ${abs}`, 'folders');
  if (!st.isDirectory()) throw new BadInputError(`discoverModels: ${abs} is a file, not a folder`, 'folders');
  return abs;
}

export function createSystemHandlers(d: WizardDeps): WizardHandlers {
  const env = d.env ?? process.env;
  /** Judged from its header, refused with the reason unless Rein can train it, then put on Rein's list. */
  const addModel = (source: string, verb: 'addModel' | 'useModel'): LocalModel => {
    const field = verb === 'addModel' ? 'source' : 'path';
    let m: LocalModel;
    try {
      m = describeSource(source, env);
    } catch (e) {
      if (e instanceof ReinError) throw new BadInputError(`${verb}: ${e.message}`, field);
      throw e;
    }
    if (!m.trainable) throw new BadInputError(`${verb}: Rein cannot train ${m.path}: ${m.why}`, field);
    if (m.format === 'hf') checkWeights(m.path, verb, field);
    d.store.registerModel({ id: m.id, name: m.name, path: m.path, format: m.format }, 'system');
    return { ...m, added: true, active: d.settings()['model.active'] === m.id };
  };
  return {
    detectAgents: () => detectAgents(d.home, env, localModelChoice(d.settings())),
    detectHardware: () => detectHardware(),
    discoverModels: (input) => {
      // The setting's folders are searched when they exist (a disk not mounted today is no error); the picked ones must.
      const set = d.settings()['models.folders'].map((f) => (f.startsWith('~/') ? path.join(env.HOME ?? homedir(), f.slice(2)) : f)).filter((f) => !f.includes('\0') && statSync(f, { throwIfNoEntry: false })?.isDirectory() === true);
      const folders = [...new Set([...set, ...input.folders.map((f) => pickedFolder(f, env))])];
      return discoverModels({ folders, demoDir: demoModelDir(d.home), active: d.settings()['model.active'], registered: d.store.registeredModels(), env });
    },
    addModel: (input) => ({ model: addModel(input.source, 'addModel') }),
    removeModel: (input) => {
      if (d.settings()['model.active'] === input.id) throw new ConflictError(`removeModel: ${input.id} is the model being trained; \`rein model use <id>\` another first`, { id: input.id });
      if (!d.store.forgetModel(input.id, 'system')) throw new NotFoundError(`removeModel: ${input.id} is not in Rein's list (\`rein model list\` marks the models Rein added)`, { id: input.id });
      return { removed: true, id: input.id };
    },
    planAgent: (input) => planAgent(d.home, input.agent, env, input.localModel === true ? localModelChoice(d.settings()) : null),
    connectAgent: async (input) => {
      const r = await connectAgent(d.home, input.agent, env, input.localModel === true ? localModelChoice(d.settings()) : null);
      if (input.localModel !== true || input.agent === 'openclaw') return r;
      // As `rein setup <agent> --local-model` does: a context that holds the agent's prompt.
      const fit = fitAgentContext(input.agent, d.settings(), env);
      if (fit.contextSize !== null) await d.setSettings({ 'serving.contextSize': fit.contextSize });
      return { ...r, notes: [...r.notes, ...fit.notes] };
    },

    useModel: async (input) => {
      // An id of Rein's list is followed to what it was added from (an Ollama tag is resolved again: a new pull moves it).
      const known = d.store.registeredModels().find((r) => r.id === input.path);
      const model = addModel(known === undefined ? input.path : known.id.startsWith('ollama:') ? known.id : known.path, 'useModel');
      const settings = await d.setSettings({ 'model.active': model.id });
      return { model: { ...model, active: true }, settings };
    },

    useDemoModel: async () => {
      const dir = demoModelDir(d.home);
      // The committed small LM (node/demo), copied once per home: servable (byte-level BPE, GGUF) and
      // pretrained on coding dialogues, so a second wizard run changes nothing.
      if (!existsSync(path.join(dir, 'config.json'))) installSmallLm(dir);
      const model = describeHfDir(dir, 'Rein demo model', 'demo');
      // The balanced preset, as `rein demo` trains it: the same trust region and LR size rule as any model (presets.ts).
      const settings = await d.setSettings({ 'model.active': dir, 'training.preset': 'balanced' });
      return { model, settings };
    },

    sendTestTurn: async () => {
      const info = readServerInfo(d.home);
      if (info === null) throw new NotAvailableError('sendTestTurn', `no capture server is running for ${d.home.dir} (start the app or rein serve)`);
      const url = new URL('/v1/turns', info.url).href;
      const t0 = performance.now();
      // Through the capture server over loopback, with the token, exactly as an agent's hook posts a turn.
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${readOrCreateToken(d.home)}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          source: 'api',
          session: 'rein-setup',
          eventId: `setup-test-${Date.now()}`,
          prompt: 'Rein setup check: is capture working?',
          response: 'Yes. This answer went through the capture server like one from your agent. Rate it Good or Bad to try the popup.',
          model: 'rein-test',
        }),
      });
      const body = (await res.json()) as { turn?: { id: number }; error?: { code: string; message: string } };
      const ms = performance.now() - t0;
      if (!res.ok || body.turn === undefined) {
        throw new ReinError('conflict', `sendTestTurn: the capture server answered ${res.status}: ${body.error?.message ?? 'no turn'}`);
      }
      return { turnId: body.turn.id, url, ms };
    },
  };
}
