// The setup wizard's verbs (common/api.ts: detectAgents … sendTestTurn) as one thin service over the installers,
// the model folders, the demo model and the capture server. compose.ts hands them to the core (core.ts CoreOptions.wizard).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { BadInputError, NotAvailableError, ReinError } from '../../common/errors.ts';
import type { ReinHome } from '../home.ts';
import type { WizardDeps, WizardHandlers } from '../core/core.ts';
import { readOrCreateToken } from '../home.ts';
import { SafetensorsFile } from '../engine/safetensors.ts';
import { readServerInfo } from '../capture-server/info.ts';
import { installSmallLm } from '../demo/small-lm.ts';
import { connectAgent, detectAgents, localModelChoice, planAgent } from './agents.ts';
import { detectHardware } from './hardware.ts';
import { describeHfDir, discoverModels } from './model-discovery.ts';


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
function checkWeights(dir: string): void {
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.safetensors'))) {
    try {
      SafetensorsFile.open(path.join(dir, f)).close();
    } catch (e) {
      throw new BadInputError(`useModel: Rein cannot train ${dir}: ${(e as Error).message}`, 'path');
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
  return {
    detectAgents: () => detectAgents(d.home, env, localModelChoice(d.settings())),
    detectHardware: () => detectHardware(),
    discoverModels: (input) => discoverModels({ folders: input.folders.map((f) => pickedFolder(f, env)), demoDir: demoModelDir(d.home), active: d.settings()['model.active'], env }),
    planAgent: (input) => planAgent(d.home, input.agent, env, input.localModel === true ? localModelChoice(d.settings()) : null),
    connectAgent: (input) => connectAgent(d.home, input.agent, env, input.localModel === true ? localModelChoice(d.settings()) : null),

    useModel: (input) => {
      const dir = path.resolve(input.path);
      if (!existsSync(path.join(dir, 'config.json'))) throw new BadInputError(`useModel: ${dir} has no config.json (an HF model folder is needed)`, 'path');
      const model = describeHfDir(dir, path.basename(dir), 'folder');
      if (!model.trainable) throw new BadInputError(`useModel: Rein cannot train ${dir}: ${model.why}`, 'path');
      checkWeights(dir);
      const settings = d.setSettings({ 'model.active': dir });
      return { model, settings };
    },

    useDemoModel: () => {
      const dir = demoModelDir(d.home);
      // The committed small LM (node/demo), copied once per home: servable (byte-level BPE, GGUF) and
      // pretrained on coding dialogues, so a second wizard run changes nothing.
      if (!existsSync(path.join(dir, 'config.json'))) installSmallLm(dir);
      const model = describeHfDir(dir, 'Rein demo model', 'demo');
      // The balanced preset, as `rein demo` trains it: the same trust region and LR size rule as any model (presets.ts).
      const settings = d.setSettings({ 'model.active': dir, 'training.preset': 'balanced' });
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
