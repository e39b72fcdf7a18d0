// The weak-label verbs: a turn's signals and the label Rein reads from them (common/implicit/reader.ts), the unrated
// turns with a label to confirm, and confirming, flipping or dismissing one. A label never rates by itself: confirming
// is the user's rating, made through `rate` with a rater that names the rule (so exports and the history show where it
// came from), and a turn that already has a rating is never rated over. With training.implicit off no label is read:
// the signals stay as evidence, and nothing is offered or confirmed.
import type { Actor, VerbOutputs, VerbParsed } from '../../common/api.ts';
import { ConflictError, NotFoundError } from '../../common/errors.ts';
import { explainLabel, implicitRater, readSignals } from '../../common/implicit/reader.ts';
import { readSettings } from '../store/settings.ts';
import type { Store } from '../store/store.ts';

export function implicitVerbs(store: Store, rate: (input: VerbParsed<'rate'>, actor: Actor) => VerbOutputs['rate']) {
  const off = (): boolean => readSettings(store)['training.implicit'] === 'off';
  const signalsOf = (turnId: number) => {
    if (store.turnSummary(turnId) === null) throw new NotFoundError(`turn ${turnId} does not exist`, { field: 'turnId' });
    return store.signals.ofTurn(turnId);
  };
  return {
    turnSignals: (input: VerbParsed<'turnSignals'>): VerbOutputs['turnSignals'] => {
      const signals = signalsOf(input.turnId);
      const label = off() ? null : readSignals(signals, input.threshold);
      return { signals, label, explanation: label === null ? null : explainLabel(label) };
    },

    weakLabels: (input: VerbParsed<'weakLabels'>): VerbOutputs['weakLabels'] => {
      const items: VerbOutputs['weakLabels']['items'] = [];
      if (off()) return { items };
      store.signals.suggested((turnId) => {
        const label = readSignals(store.signals.ofTurn(turnId), input.threshold);
        const turn = store.turnSummary(turnId);
        if (label !== null && turn !== null) items.push({ turn, label, explanation: explainLabel(label) });
        return items.length < input.limit;
      });
      return { items };
    },

    confirmWeakLabel: (input: VerbParsed<'confirmWeakLabel'>, actor: Actor): VerbOutputs['confirmWeakLabel'] => {
      if (off()) throw new ConflictError(`training.implicit is off: Rein reads no weak labels, so turn ${input.turnId} has none to confirm`, { turnId: input.turnId });
      const label = readSignals(signalsOf(input.turnId), input.threshold);
      if (label === null) throw new NotFoundError(`turn ${input.turnId} has no weak label to confirm`, { field: 'turnId' });
      const live = store.liveRating(input.turnId);
      if (live !== null) {
        throw new ConflictError(`turn ${input.turnId} is already rated ${live.kind}; a weak label never replaces a rating`, { turnId: input.turnId, ratingId: live.id });
      }
      const value = input.flip ? (label.value === 'good' ? 'bad' : 'good') : label.value;
      return rate({ turnId: input.turnId, value, rater: implicitRater(label.rule, input.flip) }, actor);
    },

    dismissWeakLabel: (input: VerbParsed<'dismissWeakLabel'>, actor: Actor): VerbOutputs['dismissWeakLabel'] => {
      signalsOf(input.turnId);
      return { dismissed: store.signals.dismiss(input.turnId, actor) };
    },
  };
}
