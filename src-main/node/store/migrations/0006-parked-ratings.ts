// Migration 6: a rating the rounds cannot train is parked with its reason. Frozen: never edit it once released and
// never import live code from here.
//
// `parked` is why a round could not encode the rating's turn into a training sequence (too long for the length
// budget, an id outside the vocabulary, a template that cannot place an agent's steps, a neutral rating of off-policy
// text...), in words; NULL for every other rating. `parked_at` is when a round parked it. A parked rating is not
// pending: it counts toward no threshold and no round draws or holds it out. Each round tries the parked ratings of
// its model again with its own model and settings, and one that encodes is pending again (NULL). Rows from before
// this migration are NULL, and the next round parks those it cannot encode. No index of its own: the pending and
// parked counts read ratings_model_pending (model_id, run_id), whose untrained rows are the two together.
export const version = 6;
export const name = 'parked-ratings';

export const sql = `
ALTER TABLE ratings ADD COLUMN parked TEXT;
ALTER TABLE ratings ADD COLUMN parked_at INTEGER;
`;
