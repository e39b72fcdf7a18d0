// Ready agents for the two envs. The keyword agents read an instruction-following model's words ("hit", "stick";
// "left", "down", ...), as LlamaGym's blackjack example does. The small-LM agents are for Rein's own demo model
// (resources/small-lm), which was pretrained only on short coding-assistant answers and never says "hit": each of
// its answers opens with one of four sentences (corpus.ts OPEN), so their action is read from that opening, a code
// book the model has to learn to use from the reward alone. An answer that opens otherwise (an apology) is
// unreadable: penalised and played as the default action, like any unreadable reply.
import type { BlackjackAction, BlackjackObs } from '../../common/gym/blackjack.ts';
import { FROZEN_LAKE_4X4, type FrozenLakeAction } from '../../common/gym/frozen-lake.ts';
import { Agent, type AgentOptions } from './agent.ts';
import type { AgentBackend } from './backend.ts';

export class BlackjackAgent extends Agent<BlackjackObs, BlackjackAction> {
  constructor(backend: AgentBackend, o: Partial<AgentOptions<BlackjackAction>> = {}) {
    super(backend, { defaultAction: 'stick', actions: ['stick', 'hit'], ...o });
  }

  getSystemPrompt(): string {
    return 'You are an expert blackjack player. Each turn you see your hand total, the dealer\'s face-up card and whether you hold a usable ace. Answer "hit" to take a card or "stick" to stop.';
  }

  formatObservation(o: BlackjackObs): string {
    return `Your total is ${o.playerSum}${o.usableAce ? ' with a usable ace' : ''}. The dealer shows ${o.dealerCard === 1 ? 'an ace' : o.dealerCard}.`;
  }

  extractAction(text: string): BlackjackAction | null {
    const hit = text.search(/\bhit\b/i);
    const stick = text.search(/\b(stick|stand|stay)\b/i);
    if (hit < 0 && stick < 0) return null;
    if (hit < 0) return 'stick';
    if (stick < 0) return 'hit';
    return hit < stick ? 'hit' : 'stick';
  }
}

/** The small LM's four openings (demo/corpus.ts OPEN), in order. */
export const SMALL_LM_OPENINGS = ['Sure.', 'Here is how.', 'Good idea.', 'This is simple.'] as const;

/** Which of the four openings `text` starts with (0-3), or null. */
export function smallLmOpening(text: string): number | null {
  const t = text.trimStart();
  const i = SMALL_LM_OPENINGS.findIndex((o) => t.startsWith(o));
  return i < 0 ? null : i;
}

/** The small LM's replies are read from their first sentence, at most 4 tokens ("This is simple." is the longest). */
export const SMALL_LM_MAX_TOKENS = 4;

export class SmallLmBlackjackAgent extends BlackjackAgent {
  constructor(backend: AgentBackend, o: Partial<AgentOptions<BlackjackAction>> = {}) {
    super(backend, { maxTokens: SMALL_LM_MAX_TOKENS, ...o });
  }

  override getSystemPrompt(): string {
    return 'Blackjack. Open with Sure. or Here is how. to hit, with Good idea. or This is simple. to stick.';
  }

  override extractAction(text: string): BlackjackAction | null {
    const i = smallLmOpening(text);
    return i === null ? null : i < 2 ? 'hit' : 'stick';
  }
}

export class FrozenLakeAgent extends Agent<number, FrozenLakeAction> {
  readonly map: readonly string[];

  constructor(backend: AgentBackend, o: Partial<AgentOptions<FrozenLakeAction>> & { map?: readonly string[] } = {}) {
    super(backend, { defaultAction: 'down', actions: ['left', 'down', 'right', 'up'], gamma: 0.99, ...o });
    this.map = o.map ?? FROZEN_LAKE_4X4;
  }

  getSystemPrompt(): string {
    return 'You walk on a frozen lake from S to the goal G. P is you, F is ice, H is a hole. The ice is slippery. Answer with one move: left, down, right or up.';
  }

  formatObservation(pos: number): string {
    const w = this.map[0]!.length;
    return this.map.map((row, r) => [...row].map((ch, c) => (r * w + c === pos ? 'P' : ch)).join('')).join('\n');
  }

  extractAction(text: string): FrozenLakeAction | null {
    const m = /\b(left|down|right|up)\b/i.exec(text);
    return m === null ? null : (m[1]!.toLowerCase() as FrozenLakeAction);
  }
}

export class SmallLmFrozenLakeAgent extends FrozenLakeAgent {
  constructor(backend: AgentBackend, o: Partial<AgentOptions<FrozenLakeAction>> & { map?: readonly string[] } = {}) {
    super(backend, { maxTokens: SMALL_LM_MAX_TOKENS, ...o });
  }

  override getSystemPrompt(): string {
    return 'Frozen lake. Open with Sure. to go left, Here is how. down, Good idea. right, This is simple. up.';
  }

  override extractAction(text: string): FrozenLakeAction | null {
    const i = smallLmOpening(text);
    return i === null ? null : (['left', 'down', 'right', 'up'] as const)[i]!;
  }
}
