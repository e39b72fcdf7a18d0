// The learning loop's turns and their ratings (loop.scenario.ts asks and rates them; loop.agents.ts checks them). The
// small LM's replies are mostly noise, and most are rated Bad; two Good give the round its contrast.
export const LOOP_PLAN: readonly (readonly [prompt: string, rating: 'good' | 'bad'])[] = [
  ['Say hello.', 'good'],
  ['Name a fruit.', 'bad'],
  ['What is two plus two?', 'bad'],
  ['Name a colour.', 'good'],
  ['Say goodbye.', 'bad'],
  ['Name an animal.', 'bad'],
];
