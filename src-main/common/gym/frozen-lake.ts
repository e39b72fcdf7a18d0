// FrozenLake with Gymnasium's FrozenLake-v1 rules (gymnasium/envs/toy_text/frozen_lake.py), the 4x4 map: walk from
// S to G over frozen tiles F without falling into a hole H. Actions left/down/right/up; on a slippery lake the move
// goes the intended way with probability 1/3 and to either side (perpendicular) with 1/3 each; walking into the edge
// stays put. Reaching G gives +1 and terminates; a hole terminates with 0; every other step gives 0. Gymnasium's
// registration wraps it in a TimeLimit of 100 steps (maxSteps), which truncates. The observation is the tile index
// row·4 + col, as Gymnasium's; render() draws the map as text with the player's tile marked, which is what a
// language model sees.
import { Rng } from '../engine/rng.ts';
import { EnvStateError, type Env, type Policy, type StepResult } from './env.ts';

export type FrozenLakeAction = 'left' | 'down' | 'right' | 'up';

export const FROZEN_LAKE_4X4 = ['SFFF', 'FHFH', 'FFFH', 'HFFG'] as const;

export interface FrozenLakeOptions {
  /** Gymnasium's is_slippery (default true). */
  slippery?: boolean;
  /** The TimeLimit (default 100, as Gymnasium registers the 4x4 map). */
  maxSteps?: number;
  map?: readonly string[];
}

const MOVES: Record<FrozenLakeAction, [number, number]> = { left: [0, -1], down: [1, 0], right: [0, 1], up: [-1, 0] };
// Gymnasium's action order (LEFT = 0, DOWN = 1, RIGHT = 2, UP = 3): a slip goes to (a − 1) mod 4 or (a + 1) mod 4.
const ORDER: readonly FrozenLakeAction[] = ['left', 'down', 'right', 'up'];

export class FrozenLakeEnv implements Env<number, FrozenLakeAction> {
  readonly name = 'frozen-lake';
  readonly actions = ORDER;
  readonly map: readonly string[];
  readonly slippery: boolean;
  readonly maxSteps: number;
  private rng: Rng | null = null;
  private pos = 0;
  private steps = 0;
  private done = true;

  constructor(o: FrozenLakeOptions = {}) {
    this.map = o.map ?? FROZEN_LAKE_4X4;
    this.slippery = o.slippery ?? true;
    this.maxSteps = o.maxSteps ?? 100;
    const w = this.map[0]?.length ?? 0;
    if (w === 0 || this.map.some((r) => r.length !== w || !/^[SFHG]+$/.test(r))) throw new RangeError('frozen-lake: the map must be equal rows of S, F, H and G');
    if (this.map.join('').split('S').length !== 2) throw new RangeError('frozen-lake: the map needs exactly one S');
  }

  get cols(): number {
    return this.map[0]!.length;
  }

  tile(pos: number): string {
    return this.map[Math.floor(pos / this.cols)]![pos % this.cols]!;
  }

  reset(seed: number): number {
    if (!Number.isInteger(seed)) throw new RangeError(`frozen-lake: a seed must be an integer, got ${seed}`);
    this.rng = new Rng(seed).fork('frozen-lake');
    this.pos = this.map.join('').indexOf('S');
    this.steps = 0;
    this.done = false;
    return this.pos;
  }

  step(action: FrozenLakeAction): StepResult<number> {
    if (this.done) throw new EnvStateError(this.name, this.rng === null ? 'step before reset' : 'step after the episode ended (call reset)');
    const a = ORDER.indexOf(action);
    if (a < 0) throw new RangeError(`frozen-lake: unknown action ${JSON.stringify(action)} (${ORDER.join(', ')})`);
    const taken = this.slippery ? ORDER[(a + Math.floor(this.rng!.uniform() * 3) + 3) % 4]! : action;
    const [dr, dc] = MOVES[taken];
    const rows = this.map.length;
    const r = Math.min(rows - 1, Math.max(0, Math.floor(this.pos / this.cols) + dr));
    const c = Math.min(this.cols - 1, Math.max(0, (this.pos % this.cols) + dc));
    this.pos = r * this.cols + c;
    this.steps++;
    const t = this.tile(this.pos);
    const terminated = t === 'H' || t === 'G';
    const truncated = !terminated && this.steps >= this.maxSteps;
    this.done = terminated || truncated;
    return { obs: this.pos, reward: t === 'G' ? 1 : 0, terminated, truncated, info: { slipped: taken !== action } };
  }

  /** The map with the player's tile shown as P, one row a line. */
  render(pos: number = this.pos): string {
    return this.map.map((row, r) => [...row].map((ch, c) => (r * this.cols + c === pos ? 'P' : ch)).join('')).join('\n');
  }
}

export const randomFrozenLake: Policy<number, FrozenLakeAction> = (_o, rng) => ORDER[Math.floor(rng() * 4)]!;
