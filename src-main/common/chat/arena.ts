// The arena's and the chat's pure parts: how a version is named to Rein's model server, how a blind pair is ordered,
// what a vote teaches each side, and the per-version statistics the Versions screen shows (win rates with their
// Wilson 95% intervals, the Good-rate of answers a version produced in real use).
import { rateEstimate, type RateEstimate } from '../training/intervals.ts';

/** The sources of the turns Rein's own chat and arena store (always captured: the user typed them into Rein). */
export const CHAT_SOURCES = ['chat', 'arena'] as const;
export type ChatSource = (typeof CHAT_SOURCES)[number];

/**
 * The `model` of a chat request that asks Rein's own model server for one version: `rein@v3`, `rein@base` (version
 * 0, the adapter off). Any other name gets the active version, as before.
 */
export function versionModelName(version: number): string {
  return version === 0 ? 'rein@base' : `rein@v${version}`;
}

/** The version a `model` name asks for (0 = base), or null for "the active one". */
export function versionOfModelName(model: unknown): number | null {
  if (typeof model !== 'string') return null;
  if (model === 'rein@base') return 0;
  const m = /^rein@v(\d{1,9})$/.exec(model);
  return m === null ? null : Number(m[1]);
}

export type ArenaVote = 'a' | 'b' | 'tie' | 'bad';

/**
 * What a vote teaches each side as a rating (docs/learning.md, "Arena votes train"): the winner good and the loser bad, both
 * bad when both are, and nothing from a tie (it says neither answer is better, not whether either is good).
 */
export function voteLabels(vote: ArenaVote): { a: 'good' | 'bad' | null; b: 'good' | 'bad' | null } {
  switch (vote) {
    case 'a':
      return { a: 'good', b: 'bad' };
    case 'b':
      return { a: 'bad', b: 'good' };
    case 'bad':
      return { a: 'bad', b: 'bad' };
    case 'tie':
      return { a: null, b: null };
  }
}

/** One voted match as the statistics read it. */
export interface VotedMatch {
  versionA: number;
  versionB: number;
  vote: ArenaVote;
  votedAt: number;
}

/**
 * A version's record against one opponent: wins and losses decide the win rate (wins / (wins + losses), with its
 * Wilson 95% interval); ties and both-bad votes are counted beside it, since neither says which answer was better.
 */
export interface HeadToHead {
  opponent: number;
  wins: number;
  losses: number;
  ties: number;
  bothBad: number;
  /** Every vote between the two, decisive or not. */
  votes: number;
  winRate: RateEstimate;
}

export function headToHead(matches: readonly VotedMatch[], version: number, opponent: number): HeadToHead {
  let wins = 0;
  let losses = 0;
  let ties = 0;
  let bothBad = 0;
  for (const m of matches) {
    const side = m.versionA === version && m.versionB === opponent ? 'a' : m.versionB === version && m.versionA === opponent ? 'b' : null;
    if (side === null || version === opponent) continue;
    if (m.vote === 'tie') ties++;
    else if (m.vote === 'bad') bothBad++;
    else if (m.vote === side) wins++;
    else losses++;
  }
  return { opponent, wins, losses, ties, bothBad, votes: wins + losses + ties + bothBad, winRate: rateEstimate(wins, wins + losses) };
}

/** good and bad counts of a version's rated answers (a 1-5 rating counts by its sign: 4-5 good, 1-2 bad, 3 neither). */
export interface GoodCount {
  version: number;
  good: number;
  bad: number;
}

/** One version's line on the Versions screen and a point of the "did it get better?" chart. */
export interface VersionStats {
  version: number;
  parentVersion: number | null;
  createdAt: number | null;
  status: string;
  /** Against its parent (null for the base, or a version without one). */
  vsParent: HeadToHead | null;
  /** Against the base, version 0 (null for the base itself). */
  vsBase: HeadToHead | null;
  /** Good / (good + bad) of the answers this version produced in real use (arena answers left out), Wilson 95%. */
  goodRate: RateEstimate;
  /**
   * The reward model's mean held-out reward of this version's answers; null until the reward model (issue #14
   * item 3) fills it in.
   */
  reward: null;
}

export function versionStats(
  versions: readonly { version: number; parentVersion: number | null; createdAt: number | null; status: string }[],
  matches: readonly VotedMatch[],
  goods: readonly GoodCount[],
): VersionStats[] {
  return versions.map((v) => {
    const g = goods.find((x) => x.version === v.version);
    const parent = v.parentVersion ?? (v.version === 0 ? null : 0);
    return {
      ...v,
      vsParent: parent === null ? null : headToHead(matches, v.version, parent),
      vsBase: v.version === 0 ? null : headToHead(matches, v.version, 0),
      goodRate: rateEstimate(g?.good ?? 0, (g?.good ?? 0) + (g?.bad ?? 0)),
      reward: null,
    };
  });
}
