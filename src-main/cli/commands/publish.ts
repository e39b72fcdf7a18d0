// `rein publish [--target T]`: publish what is active now to the enabled targets (or the named ones) and print each
// outcome; the same run happens by itself after every activation and rollback while the app runs.
import { BadInputError } from '../../common/errors.ts';
import { registerCommand } from '../dispatch.ts';

registerCommand({
  name: 'publish',
  summary: 'Publish the active adapter to Ollama, vLLM, llama-server or LM Studio (settings publish.*).',
  usage: 'rein publish [--target ollama|vllm|llamaServer|lmStudio]...',
  options: { target: { type: 'string', multiple: true, help: 'only this target <name> (default: every enabled one)' } },
  async run(ctx) {
    const { composeCore } = await import('../../node/compose.ts');
    const { publishActive } = await import('../../node/serving/publish.ts');
    const { PUBLISH_TARGETS } = await import('../../node/serving/lint.ts');
    const raw = ctx.options.target;
    const targets = raw === undefined ? undefined : (Array.isArray(raw) ? raw : [String(raw)]);
    for (const t of targets ?? []) {
      if (!(PUBLISH_TARGETS as readonly string[]).includes(t)) throw new BadInputError(`unknown target ${t} (use ${PUBLISH_TARGETS.join(', ')})`, 'target');
    }
    const core = composeCore({ home: ctx.home });
    try {
      const out = await publishActive(core, targets === undefined ? {} : { targets: targets as (typeof PUBLISH_TARGETS)[number][] });
      const lines = Object.entries(out).map(([t, o]) => `${t}: ${o.ok ? 'ok' : 'FAILED'}: ${o.message}`);
      ctx.print(lines.length === 0 ? 'no publish target is enabled (settings publish.*.enabled)' : lines.join('\n'), out);
      return Object.values(out).every((o) => o.ok) ? 0 : 1;
    } finally {
      core.close();
    }
  },
});
