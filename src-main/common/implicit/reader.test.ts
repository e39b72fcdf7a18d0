// The reader's rules, one behaviour at a time. Its precision and recall on the hand-labelled corpus:
// bench/implicit-reader.test.ts.
import { describe, expect, it } from 'vitest';
import { explainLabel, normalize, readSignals, readText, RULES } from './reader.ts';
import { modelTokens, reaskSimilarity, wordTokens, type Signal } from './signals.ts';

function signal(kind: Signal['kind'], evidence: string, id = 1): Signal {
  return { id, turnId: 1, kind, fromTurnId: 2, evidence, score: kind === 'reask' ? 0.8 : null, detail: {}, createdAt: 0, dismissedAt: null };
}

describe('readText', () => {
  it('names the rule that fired and quotes the words that fired it, as written', () => {
    expect(readText("No, that's wrong: the test still fails")).toMatchObject({ value: 'bad', rule: 'says-wrong', quote: "No, that's wrong" });
    expect(readText('Perfekt, danke!')).toMatchObject({ value: 'good', rule: 'praise', quote: 'Perfekt' });
    expect(readText('Ça ne marche toujours pas.')).toMatchObject({ value: 'bad', rule: 'still-failing' });
    expect(readText('sigue sin funcionar')).toMatchObject({ value: 'bad', rule: 'still-failing' });
    expect(new Set(RULES.map((r) => r.name)).size).toBe(RULES.length);
  });

  it('reads sarcasm and "thanks, but" as Bad: a Bad phrase wins over a Good one', () => {
    expect(readText('great, now nothing compiles')).toMatchObject({ value: 'bad', rule: 'still-failing' });
    expect(readText('thanks, but it still fails on Windows')).toMatchObject({ value: 'bad' });
  });

  it('says nothing about a new request, a negated or wished-for Good phrase, or a request that mentions undo', () => {
    expect(readText('now add a unit test for the parser')).toBeNull();
    expect(readText('make sure it works on Windows too')).toBeNull();
    expect(readText('not great')).toBeNull();
    expect(readText('undo support for the editor would be nice, can you sketch it?')).toBeNull();
    expect(readText('add a nice error message when the file is missing')).toBeNull();
  });

  it('matches accented and plain spellings alike, keeping offsets', () => {
    expect(normalize('Está MAL')).toBe('esta mal');
    expect(normalize('it’s')).toBe("it's");
    expect(readText('mach das rückgängig')).toMatchObject({ value: 'bad', rule: 'revert' });
    expect(readText('mach das rueckgaengig')).toMatchObject({ value: 'bad', rule: 'revert' });
  });
});

describe('readSignals', () => {
  it('reads the follow-up first; a re-ask or an interrupt speaks only when the words say nothing', () => {
    expect(readSignals([signal('followup', 'perfect, thanks'), signal('reask', 'x', 2)])).toMatchObject({ value: 'good', rule: 'praise', signalId: 1 });
    expect(readSignals([signal('followup', 'now add logging'), signal('reask', 'now add logging', 2)])).toBeNull();
    expect(readSignals([signal('followup', 'now add logging'), signal('reask', 'now add logging', 2)], 0.7)).toMatchObject({ value: 'bad', rule: 'reask', signalId: 2 });
    expect(readSignals([signal('interrupt', 'Request interrupted by user', 3)], 0.7)).toMatchObject({ value: 'bad', rule: 'interrupted', quote: 'Request interrupted by user' });
    expect(readSignals([])).toBeNull();
    // A dismissed label's signals suggest nothing.
    expect(readSignals([{ ...signal('followup', 'perfect, thanks'), dismissedAt: 5 }])).toBeNull();
  });

  it('reads a revert or a contradiction when the words say nothing, above an interrupt or a re-ask, never against the words', () => {
    const revert = signal('revert', "you reverted the agent's edit of src/a.ts within 4 min", 4);
    const contradiction = signal('contradiction', 'the answer said "All tests pass.", but `npm test` then failed: FAIL a.test.ts', 5);
    expect(readSignals([signal('followup', 'now add logging'), revert])).toMatchObject({ value: 'bad', rule: 'reverted', confidence: 0.85, signalId: 4 });
    expect(readSignals([signal('followup', 'now add logging'), contradiction])).toMatchObject({ value: 'bad', rule: 'contradicted', confidence: 0.8, signalId: 5 });
    expect(readSignals([signal('interrupt', 'x', 3), contradiction, revert])).toMatchObject({ rule: 'reverted' });
    expect(readSignals([signal('reask', 'x', 3), contradiction])).toMatchObject({ rule: 'contradicted' });
    // The contradiction sits at the threshold: a stricter one suggests nothing from it.
    expect(readSignals([contradiction], 0.85)).toBeNull();
    expect(readSignals([signal('followup', 'perfect, thanks'), revert])).toMatchObject({ value: 'good', rule: 'praise' });
    expect(explainLabel(readSignals([revert])!)).toBe("Rein read this as Bad because you reverted the agent's edit of src/a.ts within 4 min");
    expect(explainLabel(readSignals([contradiction])!)).toBe('Rein read this as Bad because the answer said "All tests pass.", but `npm test` then failed: FAIL a.test.ts');
  });

  it('explains a label in one sentence that quotes the user', () => {
    expect(explainLabel(readSignals([signal('followup', "no, that's wrong")])!)).toBe("Rein read this as Bad because you wrote: 'no, that's wrong'");
    expect(explainLabel(readSignals([signal('interrupt', '[Request interrupted by user]')], 0.7)!)).toBe('Rein read this as Bad because you interrupted it');
    expect(explainLabel(readSignals([signal('reask', 'fix the parser test')], 0.7)!)).toBe("Rein read this as Bad because you asked again: 'fix the parser test'");
  });
});

describe('reaskSimilarity', () => {
  it('is the Dice coefficient over bags of tokens', () => {
    expect(reaskSimilarity([1, 2, 3], [1, 2, 3])).toBe(1);
    expect(reaskSimilarity([1, 2], [3, 4])).toBe(0);
    // Shared: one 1 and one 2 (the second 1 of `a` has no partner): 2·2 / (3 + 2).
    expect(reaskSimilarity([1, 1, 2], [1, 2])).toBeCloseTo(0.8);
    expect(reaskSimilarity([], [1])).toBe(0);
    expect(reaskSimilarity(wordTokens('Fix the test!'), wordTokens('fix THE test'))).toBe(1);
  });

  it('feeds the model tokenizer lower-cased words with a leading space, so case and position do not matter', () => {
    const seen: string[] = [];
    const encode = (w: string) => {
      seen.push(w);
      return [...w].map((c) => c.charCodeAt(0));
    };
    expect(modelTokens('Fix the Test, now', encode)).toHaveLength(' fix the test now'.length);
    expect(seen).toEqual([' fix', ' the', ' test', ' now']);
  });
});
