// Blackjack with Gymnasium's Blackjack-v1 rules (gymnasium/envs/toy_text/blackjack.py; Sutton & Barto, Example 5.1):
// an infinite deck (each card drawn with replacement from 1-10 with four 10s: ace = 1, face cards = 10); the player and
// the dealer get two cards; the observation is (the player's sum, the dealer's showing card, whether the player holds
// a usable ace: one counted as 11 without busting). Hit draws a card (a bust ends the episode at −1, otherwise 0);
// stick ends it: the dealer draws until their sum is 17 or more (a soft 17 stands), and the reward is +1, 0 or −1 by
// who is closer to 21 (a bust scores 0). natural: a winning natural (an ace and a ten-card) pays +1.5. sab (Sutton &
// Barto, overrides natural): a player's natural wins +1 unless the dealer also has one. There is no natural check at
// the deal: as in Gymnasium, the player with 21 still acts. Our own code, from the rules above.
import { Rng } from '../engine/rng.ts';
import { EnvStateError, type Env, type Policy, type StepResult } from './env.ts';

export type BlackjackAction = 'stick' | 'hit';

export interface BlackjackObs {
  /** The player's sum, a usable ace counted as 11 (4-31 after a hit; Gymnasium's Discrete(32)). */
  playerSum: number;
  /** The dealer's face-up card, 1 (ace) to 10. */
  dealerCard: number;
  usableAce: boolean;
}

export interface BlackjackOptions {
  /** Pay 1.5 for a winning natural (default false, as Gymnasium). */
  natural?: boolean;
  /** Sutton & Barto's rules: a natural wins unless the dealer has one too; overrides `natural` (default false). */
  sab?: boolean;
}

/** Gymnasium's deck: ace = 1, 2-9, and four ten-valued cards. */
export const DECK = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10] as const;

export const usableAce = (hand: readonly number[]): boolean => hand.includes(1) && hand.reduce((s, c) => s + c, 0) + 10 <= 21;
export const handSum = (hand: readonly number[]): number => hand.reduce((s, c) => s + c, 0) + (usableAce(hand) ? 10 : 0);
export const isBust = (hand: readonly number[]): boolean => handSum(hand) > 21;
export const handScore = (hand: readonly number[]): number => (isBust(hand) ? 0 : handSum(hand));
export const isNatural = (hand: readonly number[]): boolean => hand.length === 2 && hand.includes(1) && hand.includes(10);

export class BlackjackEnv implements Env<BlackjackObs, BlackjackAction> {
  readonly name = 'blackjack';
  readonly actions: readonly BlackjackAction[] = ['stick', 'hit'];
  readonly natural: boolean;
  readonly sab: boolean;
  private rng: Rng | null = null;
  private player: number[] = [];
  private dealer: number[] = [];
  private done = true;
  /** A card source for tests of known hands; null draws from the seeded deck. */
  private readonly cards: (() => number) | null;

  constructor(o: BlackjackOptions = {}, cards: (() => number) | null = null) {
    this.natural = o.natural ?? false;
    this.sab = o.sab ?? false;
    this.cards = cards;
  }

  /** Both hands as dealt so far (the dealer's hidden card included): for rendering and tests. */
  get hands(): { player: readonly number[]; dealer: readonly number[] } {
    return { player: this.player, dealer: this.dealer };
  }

  private draw(): number {
    if (this.cards !== null) return this.cards();
    return DECK[Math.floor(this.rng!.uniform() * DECK.length)]!;
  }

  private obs(): BlackjackObs {
    return { playerSum: handSum(this.player), dealerCard: this.dealer[0]!, usableAce: usableAce(this.player) };
  }

  reset(seed: number): BlackjackObs {
    if (!Number.isInteger(seed)) throw new RangeError(`blackjack: a seed must be an integer, got ${seed}`);
    this.rng = new Rng(seed).fork('blackjack');
    // Gymnasium deals the dealer's two cards first, then the player's.
    this.dealer = [this.draw(), this.draw()];
    this.player = [this.draw(), this.draw()];
    this.done = false;
    return this.obs();
  }

  step(action: BlackjackAction): StepResult<BlackjackObs> {
    if (this.done) throw new EnvStateError(this.name, this.rng === null ? 'step before reset' : 'step after the episode ended (call reset)');
    if (action !== 'hit' && action !== 'stick') throw new RangeError(`blackjack: unknown action ${JSON.stringify(action)} (hit or stick)`);
    if (action === 'hit') {
      this.player.push(this.draw());
      const bust = isBust(this.player);
      this.done = bust;
      return { obs: this.obs(), reward: bust ? -1 : 0, terminated: bust, truncated: false, info: {} };
    }
    this.done = true;
    while (handSum(this.dealer) < 17) this.dealer.push(this.draw());
    const p = handScore(this.player);
    const d = handScore(this.dealer);
    let reward = Math.sign(p - d);
    if (this.sab && isNatural(this.player) && !isNatural(this.dealer)) reward = 1;
    else if (!this.sab && this.natural && isNatural(this.player) && reward === 1) reward = 1.5;
    return { obs: this.obs(), reward, terminated: true, truncated: false, info: { dealer: [...this.dealer], player: [...this.player] } };
  }
}

// Basic strategy for these rules (no double, split or surrender; the dealer stands on soft 17): Sutton & Barto's
// optimal policy for Example 5.1 (Figure 5.2, found by Monte Carlo ES). Hard totals: hit at 11 or less; at 12 stick
// against a dealer 4-6; at 13-16 stick against 2-6; stick at 17 or more. Soft totals: stick at 19 or more; at 18
// stick against 2-8; hit at 17 or less.
export const basicStrategy: Policy<BlackjackObs, BlackjackAction> = (o) => {
  const d = o.dealerCard;
  if (o.usableAce) {
    if (o.playerSum >= 19) return 'stick';
    if (o.playerSum === 18) return d >= 2 && d <= 8 ? 'stick' : 'hit';
    return 'hit';
  }
  if (o.playerSum >= 17) return 'stick';
  if (o.playerSum >= 13) return d >= 2 && d <= 6 ? 'stick' : 'hit';
  if (o.playerSum === 12) return d >= 4 && d <= 6 ? 'stick' : 'hit';
  return 'hit';
};

/** Gymnasium's action_space.sample(): hit or stick with equal odds. */
export const randomBlackjack: Policy<BlackjackObs, BlackjackAction> = (_o, rng) => (rng() < 0.5 ? 'stick' : 'hit');
