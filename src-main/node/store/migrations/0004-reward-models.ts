// Migration 4: the reward model (issue #14 item 3). Frozen: never edit it once released and never import live code
// from here.
//
// reward_models: one row per trained head, versioned per model. `base_model` is the model directory whose frozen
// weights produced the features and `adapter_version` the adapter that was on (NULL: the base alone), so a head is
// only ever applied to features of the same weights. `head` is the JSON of the fitted head (mean, std, w, b); `metrics`
// the JSON of its held-out AUROC, pair accuracy and counts.
// reward_predictions: what a head said of a turn and whether the turn was then asked about (active learning). It is
// never a rating: a prediction trains nothing unless reward.pseudoLabelWeight says so.
export const version = 4;
export const name = 'reward-models';

export const sql = `
CREATE TABLE reward_models (
  id               INTEGER PRIMARY KEY,
  model_id         TEXT NOT NULL,
  version          INTEGER NOT NULL,
  base_model       TEXT NOT NULL,
  adapter_version  INTEGER,
  run_id           INTEGER REFERENCES runs (id) ON DELETE SET NULL,
  created_at       INTEGER NOT NULL,
  ratings          INTEGER NOT NULL,
  head             TEXT NOT NULL,
  metrics          TEXT NOT NULL DEFAULT '{}',
  UNIQUE (model_id, version)
);

CREATE TABLE reward_predictions (
  turn_id          INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  reward_model_id  INTEGER NOT NULL REFERENCES reward_models (id) ON DELETE CASCADE,
  p                REAL NOT NULL,
  asked            INTEGER NOT NULL CHECK (asked IN (0, 1)),
  created_at       INTEGER NOT NULL,
  PRIMARY KEY (turn_id, reward_model_id)
);
CREATE INDEX reward_predictions_model ON reward_predictions (reward_model_id);
`;
