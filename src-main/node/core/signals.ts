// Records what the user did after an answer (store/signals.ts), as each turn is captured from any client (the
// hooks of Claude Code, Codex and OpenClaw, the proxy, Rein's own chat): the new turn's prompt is the next user
// message of its session, so it becomes a `followup` signal on the session's previous answer, and a `reask` one
// when it restates that answer's prompt. The re-ask measure is the Dice coefficient over token-id bags from the
// active model's tokenizer, word by word lower-cased (common/implicit/signals.ts modelTokens, reaskSimilarity); where no model is set up, or its
// tokenizer cannot be loaded, over lower-cased words, and each signal's detail names the measure used.
//
// An agent turn's tool calls say more (common/implicit/tools.ts): a file it edited that is back as it was when the
// session's next turn is stored is a `revert` on it (core/edit-watch.ts), and an answer that claims the tests pass or
// the build succeeds is a `contradiction` when its own last run of them failed, or the next turn's first run, before
// anything could change the files, fails.
import path from 'node:path';
import type { ContextMessage, TurnSummary } from '../../common/domain.ts';
import { modelTokens, REASK_MIN_SIMILARITY, reaskSimilarity, wordTokens } from '../../common/implicit/signals.ts';
import { commandOf, contradictionEvidence, contradictionNext, contradictionWithin, mayWrite, toolCalls } from '../../common/implicit/tools.ts';
import { redactCapped } from '../store/scrub.ts';
import { EditWatch, type WatchedFile } from './edit-watch.ts';
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
  private readonly edits = new EditWatch();

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
   * Called once for each newly stored turn. An arena answer (two answers to one prompt, not a conversation) and a
   * subagent's turn (its prompt came from the parent agent) react to nothing; a turn without a session is read only
   * against itself (an answer that claims the tests pass over its own failing run).
   */
  captured(turn: TurnSummary): void {
    if (turn.source === 'arena' || turn.eventId.includes(':agent:')) return;
    const full = this.store.getTurn(turn.id);
    const within = contradictionWithin(full.context, full.response);
    if (within !== null) this.contradiction(turn.id, null, contradictionEvidence(within.claim, within.run, false), { source: turn.source, later: false });
    if (turn.session === null) return;
    this.reverted(sessionKey(turn.source, turn.session), turn.createdAt, full.context);
    const prev = this.store.signals.previousInSession({ id: turn.id, session: turn.session, source: turn.source, createdAt: turn.createdAt });
    if (prev === null) return;
    const next = contradictionNext(this.store.getTurn(prev.id).response, full.context);
    if (next !== null) this.contradiction(prev.id, turn.id, contradictionEvidence(next.claim, next.run, true), { source: turn.source, later: true });
    const prompt = full.prompt;
    if (prompt.trim() === '') return;
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

  /**
   * A stored turn's edits, to be checked at its session's next prompt (or next stored turn). `context` is its tool calls as
   * the client sent them (before the store capped and redacted them: the old and new text must be exact to undo an
   * edit), and `cwd` the client's working directory; only files inside it are read.
   */
  watchEdits(turn: TurnSummary, context: readonly ContextMessage[], cwd: string): number {
    if (turn.session === null || turn.source === 'arena' || turn.eventId.includes(':agent:')) return 0;
    return this.edits.watch(sessionKey(turn.source, turn.session), turn.id, turn.createdAt, context, cwd).length;
  }

  /**
   * The user submitted a new prompt in the session (core verb sessionPrompted, from a hook's UserPromptSubmit): the
   * files its last turn edited are checked now, when only the user can have touched them since the turn ended.
   * Returns how many reverts it recorded.
   */
  prompted(source: string, session: string, at: number): number {
    return this.recordReverts(sessionKey(source, session), at, () => false);
  }

  /** The check when the session's next turn is stored, for edits no prompt hook checked first (core/edit-watch.ts). */
  private reverted(key: string, at: number, context: readonly ContextMessage[]): void {
    // By now the new turn's own calls may have put a file back (an edit of it, a command naming it, a git checkout),
    // which is not the user's doing: the agent may have undone its edit because the user asked it to. A call whose
    // input could not be read may have done anything.
    const calls = toolCalls(context).filter(mayWrite);
    const restores = calls.some((c) => /\bgit\s+(checkout|restore|reset|stash|apply|revert)\b/u.test(commandOf(c) ?? ''));
    const skip = (f: WatchedFile): boolean => restores || calls.some((c) => c.input === null || JSON.stringify(c.input).includes(path.basename(f.file)));
    this.recordReverts(key, at, skip);
  }

  private recordReverts(key: string, at: number, skip: (f: WatchedFile) => boolean): number {
    let n = 0;
    for (const r of this.edits.check(key, at, skip)) {
      // The turn may have been deleted since it was watched; its signals went with it.
      if (this.store.turnSummary(r.turnId) === null) continue;
      const minutes = Math.max(1, Math.ceil(r.gapMs / 60_000));
      const evidence = redactCapped(`you reverted the agent's edit of ${r.file.shown} within ${minutes} min`, 1000).text;
      // The detail stays in the clear (migration 0006): numbers and tool names, never the path.
      const stored = this.store.signals.record({ turnId: r.turnId, kind: 'revert', fromTurnId: null, evidence, score: null, detail: { gapMs: r.gapMs, tools: r.file.tools } });
      if (stored !== null) n++;
    }
    return n;
  }

  private contradiction(turnId: number, fromTurnId: number | null, text: string, detail: Record<string, unknown>): void {
    const evidence = redactCapped(text, 1000).text;
    this.store.signals.record({ turnId, kind: 'contradiction', fromTurnId, evidence, score: null, detail });
  }
}

/** Turns of one session of one client (two clients' session ids never mix). */
const sessionKey = (source: string, session: string): string => `${source}\0${session}`;
