// Records what the user did after an answer (store/signals.ts), as each turn is captured from any client (the
// hooks of Claude Code, Codex and OpenClaw, the proxy, Rein's own chat): the new turn's prompt is the next user
// message of its session, so it becomes a `followup` signal on the session's previous answer, and a `reask` one
// when it restates that answer's prompt. The re-ask measure is the Dice coefficient over token-id bags from the
// active model's tokenizer, word by word lower-cased (common/implicit/signals.ts modelTokens, reaskSimilarity); where no model is set up, or its
// tokenizer cannot be loaded, over lower-cased words, and each signal's detail names the measure used.
import type { TurnSummary } from '../../common/domain.ts';
import { modelTokens, REASK_MIN_SIMILARITY, reaskSimilarity, wordTokens } from '../../common/implicit/signals.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { loadModelTokenizer, resolveModelDir } from '../model-files/base-model.ts';
import type { Store } from '../store/store.ts';

export interface SignalRecorderOptions {
  store: Store;
  /** The active model's id (its tokenizer measures re-asks). */
  modelId: () => string;
}

export class SignalRecorder {
  private readonly store: Store;
  private readonly modelId: () => string;
  /** Tokenizers by model id; null: that model has none here; 'loading': asked for, not there yet. */
  private readonly tokenizers = new Map<string, ReinTokenizer | null | 'loading'>();

  constructor(opts: SignalRecorderOptions) {
    this.store = opts.store;
    this.modelId = opts.modelId;
  }

  /**
   * The tokens of `text` for the re-ask measure, and the measure's name for the signal's detail. A model's tokenizer
   * is loaded once, on a timer after the capture that first asked for it (about 5 s for Qwen2's or Llama's
   * tokenizer.json on two busy cores), never on the capture's own path: until it is there, the measure is words.
   */
  tokens(text: string): { ids: readonly unknown[]; measure: string } {
    const id = this.modelId();
    const tok = this.tokenizers.get(id);
    if (tok === undefined) {
      this.tokenizers.set(id, 'loading');
      setTimeout(() => {
        let loaded: ReinTokenizer | null;
        try {
          loaded = loadModelTokenizer(resolveModelDir(this.store, id, 'reask'));
        } catch {
          loaded = null;
        }
        this.tokenizers.set(id, loaded);
      }, 0).unref();
    }
    return tok === undefined || tok === null || tok === 'loading'
      ? { ids: wordTokens(text), measure: 'dice/words' }
      : { ids: modelTokens(text, (w) => tok.encode(w)), measure: `dice/tokens:${id}` };
  }

  /**
   * Called once for each newly stored turn. A turn without a session, an arena answer (two answers to one prompt,
   * not a conversation) and a subagent's turn (its prompt came from the parent agent) react to nothing.
   */
  captured(turn: TurnSummary): void {
    if (turn.session === null || turn.source === 'arena' || turn.eventId.includes(':agent:')) return;
    const prev = this.store.signals.previousInSession({ id: turn.id, session: turn.session, source: turn.source, createdAt: turn.createdAt });
    if (prev === null) return;
    const prompt = this.store.signals.promptOf(turn.id);
    if (prompt === null || prompt.trim() === '') return;
    const a = this.tokens(prev.prompt);
    const b = this.tokens(prompt);
    const score = reaskSimilarity(a.ids, b.ids);
    // The detail stays in the clear (migration 0006): numbers and names only, never text.
    const detail = { gapMs: Math.max(0, turn.createdAt - prev.createdAt), measure: a.measure, similarity: score };
    this.store.signals.record({ turnId: prev.id, kind: 'followup', fromTurnId: turn.id, evidence: prompt, score: null, detail });
    if (score >= REASK_MIN_SIMILARITY) {
      this.store.signals.record({ turnId: prev.id, kind: 'reask', fromTurnId: turn.id, evidence: prompt, score, detail: { measure: a.measure } });
    }
  }
}
