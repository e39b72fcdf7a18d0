// `rein model list|add|use|remove`: the models on this computer (Rein's own list, the HF cache, Ollama, LM Studio,
// models.folders) and which one is trained. Thin over the discoverModels, addModel, useModel and removeModel verbs,
// which the app's model step calls too.
import type { LocalModel } from '../../common/system.ts';
import { registerCommand } from '../dispatch.ts';
import { restartNotice } from './format.ts';

function size(bytes: number | null): string {
  if (bytes === null) return '?';
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KiB`;
}

function paramWords(n: number | null): string {
  if (n === null) return '?';
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  return `${(n / 1e3).toFixed(0)}K`;
}

/** One model: the id to type, then what it is, then trainable or why not. */
export function formatModel(m: LocalModel): string {
  const mark = m.active ? '*' : ' ';
  const what = [m.arch ?? 'unknown architecture', m.type ?? '?', `${paramWords(m.params)} params`, size(m.bytes), m.source + (m.added && m.source !== 'added' ? ', added' : '')].join(' · ');
  const head = `${mark} ${m.id}${m.name !== m.id && !m.id.endsWith(m.name) ? `  (${m.name})` : ''}`;
  return `${head}\n    ${what}\n    ${m.trainable ? 'trainable' : `not trainable: ${m.why ?? 'unknown reason'}`}`;
}

registerCommand({
  name: 'model list',
  summary: 'The models on this computer (Rein\'s list, Hugging Face cache, Ollama, LM Studio, models.folders), and which Rein can train.',
  usage: 'rein model list [--folder <dir>]... [--trainable]',
  description: 'Each shows its id (what `rein model use` takes), architecture, weight type, size, and "trainable" or the reason it is not. * marks the model being trained. Only headers and config.json are read.',
  args: [0, 0],
  options: {
    folder: { type: 'string', multiple: true, help: 'also search this folder <dir> (HF folders and .gguf files)' },
    trainable: { type: 'boolean', help: 'only the models Rein can train' },
  },
  async run(ctx) {
    const f = ctx.options.folder;
    const folders = f === undefined ? [] : Array.isArray(f) ? f.map(String) : [String(f)];
    const all = await (await ctx.api()).call('discoverModels', { folders });
    const models = ctx.options.trainable === true ? all.filter((m) => m.trainable) : all;
    const text =
      models.length === 0
        ? 'No models found. `rein model add <path-or-ollama:name:tag>` adds one; `rein model use demo` trains the small demo model that ships with Rein.'
        : `${models.map(formatModel).join('\n')}\n(${models.length} model${models.length === 1 ? '' : 's'}, ${models.filter((m) => m.trainable).length} trainable; \`rein model use <id>\` trains one)`;
    ctx.print(text, models);
  },
});

registerCommand({
  name: 'model add',
  summary: 'Add a model to Rein\'s list: ollama:<name>[:<tag>], a .gguf file or an HF model folder.',
  usage: 'rein model add <path-or-ollama:name:tag> [--use]',
  description: 'The model is judged from its GGUF header or config.json (no weights are read); one Rein cannot train is refused with the reason. Its files stay where they are.',
  args: [1, 1],
  options: { use: { type: 'boolean', help: 'and train it (the same as `rein model use`)' } },
  async run(ctx) {
    const api = await ctx.api();
    const source = ctx.args[0]!;
    if (ctx.options.use === true) {
      const r = await api.call('useModel', { path: source });
      ctx.print(`added ${r.model.id} and training it now\n${formatModel(r.model)}`, r);
      return;
    }
    const r = await api.call('addModel', { source });
    ctx.print(`added ${r.model.id}\n${formatModel(r.model)}\n(\`rein model use ${r.model.id}\` trains it)`, r);
  },
});

registerCommand({
  name: 'model use',
  summary: 'Train and serve this model: demo, an id from `rein model list`, ollama:<name>:<tag>, a .gguf file or an HF folder.',
  usage: 'rein model use <demo|id|ollama:name:tag|path>',
  description:
    'Sets model.active (adding the model to Rein\'s list); `rein serve-model` serves it. `demo` is the small LM that ships with Rein ' +
    '(copied into the Rein home once, trained with the balanced preset). Ratings, versions and the reward baseline are kept per model: switching back finds them again.',
  args: [1, 1],
  async run(ctx) {
    const api = await ctx.api();
    const id = ctx.args[0]!;
    // The same verb as the setup wizard's "Use the demo model" button.
    const r = id === 'demo' ? await api.call('useDemoModel', {}) : await api.call('useModel', { path: id });
    const active = { ...r.model, active: true };
    ctx.print(`training ${id === 'demo' ? `the demo model (${r.model.path})` : r.model.id}\n${formatModel(active)}`, { ...r, model: active });
    restartNotice(ctx, r.settings);
  },
});

registerCommand({
  name: 'model remove',
  summary: 'Take a model off Rein\'s list (its files are never deleted).',
  usage: 'rein model remove <id>',
  description: 'Only models Rein added can be removed, and not the one being trained. The model\'s files, ratings and versions stay.',
  args: [1, 1],
  async run(ctx) {
    const r = await (await ctx.api()).call('removeModel', { id: ctx.args[0]! });
    ctx.print(`removed ${r.id} from Rein's list (its files are untouched)`, r);
  },
});
