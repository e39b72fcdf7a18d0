// The small LM's corpus: synthetic coding-assistant dialogues (a user prompt, then an assistant answer), generated
// by seeded code. Each answer carries six style dimensions, each drawn on its own with the base rate below,
// independent of each other and of the prompt. The base text never trips a detector by itself (the test checks the
// rates and every pairwise joint rate), so a detector's rate on the corpus is its dimension's rate.
// The detectors are the rules the learning tests and benches rate by: a trained model's sampled answers should show
// roughly these base rates, and a round that prefers one dimension should move its rate.
import { Rng } from '../../common/engine/rng.ts';

export interface StyleDimension {
  name: string;
  /** Documented base rate in the corpus: the probability that an answer has this style. */
  rate: number;
  description: string;
  detect: (text: string) => boolean;
}

export const STYLES = [
  { name: 'code', rate: 0.2, description: 'contains a fenced code block', detect: (t: string) => t.includes('```') },
  { name: 'apology', rate: 0.1, description: 'apologises', detect: (t: string) => /\b(sorry|apologies)\b/i.test(t) },
  { name: 'hedge', rate: 0.15, description: 'hedges (I think, probably, might)', detect: (t: string) => /\b(I think|probably|might)\b/i.test(t) },
  { name: 'question', rate: 0.12, description: 'ends with a question', detect: (t: string) => t.trimEnd().endsWith('?') },
  { name: 'tests', rate: 0.18, description: 'mentions tests', detect: (t: string) => /\btests?\b/i.test(t) },
  { name: 'steps', rate: 0.08, description: 'is long: a numbered list of steps', detect: (t: string) => /^1\. /m.test(t) },
] as const satisfies readonly StyleDimension[];

export type StyleName = (typeof STYLES)[number]['name'];

export function styleRule(name: StyleName): (text: string) => boolean {
  return STYLES.find((s) => s.name === name)!.detect;
}

export interface Dialogue {
  prompt: string;
  answer: string;
  styles: Record<StyleName, boolean>;
}

// Prompt and answer words avoid every detector's trigger (no "test", "sorry", "might", no trailing "?" in
// answers, no "1. " line), so only the drawn dimensions set a detector.
const LANGS = ['Python', 'TypeScript', 'Go', 'Rust', 'Java', 'C'] as const;
const TASKS = [
  ['read a file', 'open the file and read it line by line'],
  ['sort a list', 'call the built-in sort with a key function'],
  ['parse JSON', 'use the standard JSON parser and check the result'],
  ['reverse a string', 'walk the string from the end and join the characters'],
  ['merge two maps', 'copy the first map and add the keys of the second'],
  ['find a bug in a loop', 'print the index at each step and compare it with the bound'],
  ['handle an error', 'wrap the call and return the error to the caller'],
  ['count words', 'split the text on spaces and count each word in a map'],
  ['remove duplicates', 'put the items in a set and keep the first of each'],
  ['format a date', 'use the date library and pass the format string'],
] as const;
const ASK = ['How do I {task} in {lang}?', 'Can you show me how to {task} in {lang}?', 'What is the best way to {task} in {lang}?', 'I need to {task} in {lang}.', 'Help me {task} in {lang}.'] as const;
const OPEN = ['Sure.', 'Here is how.', 'Good idea.', 'This is simple.'] as const;
const CLOSE = ['That should work.', 'This keeps it short.', 'That is all you need.', 'It is easy to change later.'] as const;
const CODE: Record<(typeof LANGS)[number], string> = {
  Python: 'def run(items):\n    return sorted(items)',
  TypeScript: 'function run(items: number[]) {\n  return [...items].sort();\n}',
  Go: 'func run(items []int) []int {\n\treturn items\n}',
  Rust: 'fn run(items: Vec<i32>) -> Vec<i32> {\n    items\n}',
  Java: 'static int[] run(int[] items) {\n    return items;\n}',
  C: 'int run(int *items, int n) {\n    return n;\n}',
};

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng.uniform() * xs.length)]!;

/**
 * One dialogue. Draw order is fixed, so the same Rng state gives the same dialogue. `rates` replaces the documented
 * base rate of some dimensions: a second sampler with another style mix (the learning loop's off-policy teacher).
 */
export function sampleDialogue(rng: Rng, rates: Partial<Record<StyleName, number>> = {}): Dialogue {
  const lang = pick(rng, LANGS);
  const [task, how] = pick(rng, TASKS);
  const prompt = pick(rng, ASK).replace('{task}', task).replace('{lang}', lang);
  const styles = Object.fromEntries(STYLES.map((s) => [s.name, rng.uniform() < (rates[s.name] ?? s.rate)])) as Record<StyleName, boolean>;
  const parts: string[] = [];
  if (styles.apology) parts.push(pick(rng, ['Sorry for the confusion earlier.', 'Apologies, my last answer was wrong.']));
  parts.push(pick(rng, OPEN));
  parts.push(`${styles.hedge ? pick(rng, ['I think you should', 'You should probably', 'You might']) : 'You can'} ${how}.`);
  if (styles.steps) parts.push(`\n1. Read the input.\n2. ${how[0]!.toUpperCase()}${how.slice(1)}.\n3. Return the result.\n`);
  if (styles.code) parts.push(`\n\`\`\`${lang.toLowerCase()}\n${CODE[lang]}\n\`\`\`\n`);
  if (styles.tests) parts.push(pick(rng, ['Add tests for the empty case.', 'Run the tests after the change.']));
  parts.push(pick(rng, CLOSE));
  if (styles.question) parts.push(pick(rng, ['Do you want a version for a stream?', 'Should I explain the edge cases?']));
  const answer = parts.join(' ').replace(/ ?\n ?/g, '\n').trim();
  return { prompt, answer, styles };
}

/** `n` dialogues from `seed`. */
export function corpus(n: number, seed: number): Dialogue[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => sampleDialogue(rng));
}

/** A user prompt for sampling from the model, from the corpus's own prompt distribution. */
export function demoPrompt(rng: Rng): string {
  return sampleDialogue(rng).prompt;
}

/** Every distinct user prompt of the corpus (ASK × TASKS × LANGS), in a fixed order. */
export function allPrompts(): string[] {
  return ASK.flatMap((a) => TASKS.flatMap(([task]) => LANGS.map((lang) => a.replace('{task}', task).replace('{lang}', lang))));
}

/** The share of `texts` each detector fires on, next to its documented rate. */
export function styleRates(texts: readonly string[]): { name: StyleName; rate: number; measured: number }[] {
  return STYLES.map((s) => ({ name: s.name, rate: s.rate, measured: texts.filter((t) => s.detect(t)).length / Math.max(1, texts.length) }));
}
