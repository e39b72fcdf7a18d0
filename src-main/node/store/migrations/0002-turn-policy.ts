// Migration 2: what a turn's behaviour logprobs μ are the logprobs of. Frozen: never edit it once released and never
// import live code from here.
//
// `policy` is JSON text, set only on turns stored with tokens and logprobs: {"modelId": the model (ratings.model_id
// form) whose tokenizer gave the ids and whose weights sampled them, "temperature": T, "topP": p}, where each stored
// logprob is log softmax(logits/T) renormalised over the top-p nucleus, the distribution the token was drawn from
// (T = 0: greedy, logprob 0). NULL on older rows: nothing says which distribution their logprobs belong to (Rein's
// model server stored temperature-1 logprobs whatever it sampled at), so training treats them as off-policy text.
export const version = 2;
export const name = 'turn-policy';

export const sql = `
ALTER TABLE turns ADD COLUMN policy TEXT;
`;
