// The reward model's features: the frozen base's last decoder-layer output, run on ONNX Runtime through the
// engine's driver, mean-pooled over the answer's tokens (the prompt conditions them but is not pooled).
//   T = tokens, H = hidden
import type { ContextMessage } from '../../../common/domain.ts';
import { BadInputError } from '../../../common/errors.ts';
import type { Engine } from '../../engine/engine.ts';

/** The longest sequence a feature reads: the answer's start is kept, the prompt is cut from the left. */
export const FEATURE_MAX_TOKENS = 256;

/** Mean of the answer rows of the last hidden state: [H]. */
export async function answerFeatures(engine: Engine, messages: readonly ContextMessage[], answer: string, maxTokens = FEATURE_MAX_TOKENS): Promise<Float32Array> {
  const tok = engine.tokenizer;
  if (tok === null) throw new BadInputError('the reward model needs the model\'s tokenizer.json to encode text', 'model');
  const { promptIds, responseIds } = tok.encodeTurn(messages, answer);
  if (responseIds.length === 0) throw new BadInputError('the answer encodes to no tokens', 'answer');
  const resp = responseIds.slice(0, Math.max(1, maxTokens - 1));
  const prompt = promptIds.slice(Math.max(0, promptIds.length - (maxTokens - resp.length)));
  const tokens = [...prompt, ...resp];
  const H = engine.config.hiddenSize;
  const h = await engine.driver.hiddenStates(tokens, null); // [T, H]
  const out = new Float32Array(H);
  for (let t = prompt.length; t < tokens.length; t++) for (let j = 0; j < H; j++) out[j]! += h[t * H + j]! / resp.length;
  return out;
}
