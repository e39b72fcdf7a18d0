// node scripts/gym-example.ts [episodes=64]
// LlamaGym's README loop with Rein's library (`rein/gym`): a blackjack agent for the small demo LM, trained in a fresh
// Rein home, then played on 200 held-out hands next to basic strategy. A minute or two on a laptop.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, BlackjackEnv, basicStrategy, evaluateAgent, evaluatePolicy, heldOutSeeds, openGymHome, type AgentBackend, type BlackjackAction, type BlackjackObs } from 'rein/gym';

// Your own agent: a system prompt, how an observation reads, and how a reply becomes an action. The small LM only
// knows its corpus's four openings, so this agent reads its action from the opening (see SmallLmBlackjackAgent).
class MyBlackjackAgent extends Agent<BlackjackObs, BlackjackAction> {
  constructor(backend: AgentBackend) {
    super(backend, { defaultAction: 'stick', actions: ['stick', 'hit'], maxTokens: 4, batchEpisodes: 16 });
  }
  getSystemPrompt(): string {
    return 'Blackjack. Open with Sure. or Here is how. to hit, with Good idea. or This is simple. to stick.';
  }
  formatObservation(o: BlackjackObs): string {
    return `Your total is ${o.playerSum}${o.usableAce ? ' with a usable ace' : ''}. The dealer shows ${o.dealerCard === 1 ? 'an ace' : o.dealerCard}.`;
  }
  extractAction(text: string): BlackjackAction | null {
    if (/^\s*(Sure\.|Here is how\.)/.test(text)) return 'hit';
    if (/^\s*(Good idea\.|This is simple\.)/.test(text)) return 'stick';
    return null;
  }
}

const episodes = Number(process.argv[2]?.split('=')[1] ?? 64);
const dir = mkdtempSync(path.join(os.tmpdir(), 'rein-gym-example-'));
const home = await openGymHome(path.join(dir, 'home'));
try {
  const env = new BlackjackEnv();
  const agent = new MyBlackjackAgent(home.session);
  // The env gate: a round's candidate version plays 100 fresh held-out hands against its parent (the same hands and
  // draws on both sides) and goes live only if its return is not lower. Without it, the rating gate judges the round.
  home.session.gateOn(agent, env, { episodes: 100 });
  for (let episode = 0; episode < episodes; episode++) {
    let obs = env.reset(episode);
    for (;;) {
      const action = await agent.act(obs);
      const { obs: next, reward, terminated, truncated } = env.step(action);
      agent.assignReward(reward);
      if (terminated || truncated) break;
      obs = next;
    }
    const round = await agent.terminateEpisode();
    if (round !== null) console.log(`round ${round.runId}: v${round.version} ${round.status}${round.reason === null ? '' : ` (${round.reason})`}`);
  }
  const seeds = heldOutSeeds(200);
  const trained = await evaluateAgent(agent, env, seeds);
  const basic = evaluatePolicy(env, basicStrategy, seeds);
  console.log(`win rate on 200 held-out hands: agent ${trained.wins.rate.toFixed(3)}, basic strategy ${basic.wins.rate.toFixed(3)}; unreadable replies ${agent.stats.invalid}`);
} finally {
  await home.close();
  rmSync(dir, { recursive: true, force: true });
}
