// Blackjack-v1's rules on known hands (cards fed in the order Gymnasium draws them: the dealer's two, the player's
// two, then each hit or dealer draw), the Env contract, and the baselines on many seeded hands.
import { describe, expect, it } from 'vitest';
import { BlackjackEnv, basicStrategy, handSum, isNatural, randomBlackjack, usableAce, type BlackjackOptions } from './blackjack.ts';
import { EnvStateError } from './env.ts';
import { evaluatePolicy, heldOutSeeds } from './evaluate.ts';

/** An env that deals `cards` in order (dealer, dealer, player, player, then draws). */
function dealt(cards: number[], o: BlackjackOptions = {}): BlackjackEnv {
  const queue = [...cards];
  return new BlackjackEnv(o, () => {
    const c = queue.shift();
    if (c === undefined) throw new Error('the test ran out of cards');
    return c;
  });
}

describe('blackjack hands', () => {
  it('counts an ace as 11 while that does not bust', () => {
    expect(handSum([1, 6])).toBe(17);
    expect(usableAce([1, 6])).toBe(true);
    expect(handSum([1, 6, 10])).toBe(17);
    expect(usableAce([1, 6, 10])).toBe(false);
    expect(handSum([1, 1])).toBe(12);
    expect(isNatural([10, 1])).toBe(true);
    expect(isNatural([1, 5, 5])).toBe(false);
  });

  it('observes the player sum, the dealer\'s first card and the usable ace', () => {
    const env = dealt([7, 10, 1, 5]);
    expect(env.reset(0)).toEqual({ playerSum: 16, dealerCard: 7, usableAce: true });
  });

  it('a hit that busts ends the episode at −1 without the dealer drawing', () => {
    const env = dealt([10, 7, 10, 6, 9]);
    env.reset(0);
    const r = env.step('hit');
    expect(r).toMatchObject({ obs: { playerSum: 25, usableAce: false }, reward: -1, terminated: true, truncated: false });
    expect(env.hands.dealer).toEqual([10, 7]);
  });

  it('a hit that does not bust gives 0 and continues; a soft hand turns hard instead of busting', () => {
    const env = dealt([10, 7, 1, 6, 9]);
    env.reset(0);
    expect(env.step('hit')).toMatchObject({ obs: { playerSum: 16, usableAce: false }, reward: 0, terminated: false });
  });

  it('the dealer draws to 17 and stands on a soft 17', () => {
    const env = dealt([2, 3, 10, 9, 4, 1, 2, 5]);
    env.reset(0);
    // Dealer 2+3 = 5, draws 4 (9), an ace (soft 20: stands). Player 19 loses to 20.
    const r = env.step('stick');
    expect(env.hands.dealer).toEqual([2, 3, 4, 1]);
    expect(r.reward).toBe(-1);
    const soft = dealt([1, 6, 10, 10]);
    soft.reset(0);
    // Soft 17 stands: the player's 20 wins.
    expect(soft.step('stick').reward).toBe(1);
    expect(soft.hands.dealer).toEqual([1, 6]);
  });

  it('a dealer bust pays the player, a tie is 0, a lower sum loses', () => {
    const bust = dealt([10, 6, 10, 2, 10]);
    bust.reset(0);
    expect(bust.step('stick').reward).toBe(1);
    const tie = dealt([10, 8, 10, 8]);
    tie.reset(0);
    expect(tie.step('stick').reward).toBe(0);
    const low = dealt([10, 8, 10, 7]);
    low.reset(0);
    expect(low.step('stick').reward).toBe(-1);
  });

  it('a natural pays 1 by default, 1.5 with natural, and wins under sab unless the dealer has one too', () => {
    // Dealer 10+9 = 19; player ace+10 = 21.
    expect((() => { const e = dealt([10, 9, 1, 10]); e.reset(0); return e.step('stick').reward; })()).toBe(1);
    expect((() => { const e = dealt([10, 9, 1, 10], { natural: true }); e.reset(0); return e.step('stick').reward; })()).toBe(1.5);
    // A natural that only ties a dealer's three-card 21 is 0 by the default rules, a win by sab's.
    expect((() => { const e = dealt([10, 5, 1, 10, 6], { natural: true }); e.reset(0); return e.step('stick').reward; })()).toBe(0);
    expect((() => { const e = dealt([10, 5, 1, 10, 6], { sab: true }); e.reset(0); return e.step('stick').reward; })()).toBe(1);
    // Both naturals: a tie, under sab too; sab overrides natural.
    expect((() => { const e = dealt([1, 10, 10, 1], { sab: true, natural: true }); e.reset(0); return e.step('stick').reward; })()).toBe(0);
    expect((() => { const e = dealt([10, 9, 1, 10], { sab: true, natural: true }); e.reset(0); return e.step('stick').reward; })()).toBe(1);
  });
});

describe('the Env contract', () => {
  it('the same seed gives the same episode under the same actions; another seed another one', () => {
    const env = new BlackjackEnv();
    const play = (seed: number) => [env.reset(seed), env.step('hit'), ...(env.hands.player.length > 0 ? [env.hands] : [])].map((x) => JSON.stringify(x));
    expect(play(5)).toEqual(play(5));
    const firsts = new Set(Array.from({ length: 50 }, (_, s) => JSON.stringify(new BlackjackEnv().reset(s))));
    expect(firsts.size).toBeGreaterThan(10);
  });

  it('refuses a step before reset, after the end, and an unknown action', () => {
    const env = new BlackjackEnv();
    expect(() => env.step('hit')).toThrow(EnvStateError);
    env.reset(1);
    expect(() => env.step('double' as never)).toThrow(/unknown action "double"/);
    env.step('stick');
    expect(() => env.step('hit')).toThrow(/after the episode ended/);
    expect(env.reset(2).playerSum).toBeGreaterThanOrEqual(4);
  });

  it('draws from Gymnasium\'s deck: a ten-valued card 4 times in 13', () => {
    const env = new BlackjackEnv();
    let tens = 0;
    let n = 0;
    for (let s = 0; s < 3000; s++) {
      env.reset(s);
      for (const c of [...env.hands.dealer, ...env.hands.player]) {
        n++;
        if (c === 10) tens++;
      }
    }
    // 12,000 cards: 4/13 = 0.3077 ± 3 sd (0.0042·3).
    expect(Math.abs(tens / n - 4 / 13)).toBeLessThan(0.013);
  });

  it('basic strategy wins about 42% and beats always-stick and random play on the same 10,000 seeds', () => {
    const env = new BlackjackEnv();
    const seeds = heldOutSeeds(10_000);
    const basic = evaluatePolicy(env, basicStrategy, seeds);
    const stick = evaluatePolicy(env, () => 'stick', seeds);
    const random = evaluatePolicy(env, randomBlackjack, seeds);
    // Published values for these rules: the optimal policy's win rate is about 42-43% and its mean return about −0.05.
    expect(basic.wins.rate).toBeGreaterThan(0.4);
    expect(basic.wins.rate).toBeLessThan(0.445);
    expect(basic.meanReturn.mean).toBeGreaterThan(stick.meanReturn.mean + 0.1);
    expect(random.wins.rate).toBeLessThan(0.32);
  });
});
