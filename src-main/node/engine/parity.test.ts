// Tier-3 parity with llama.cpp for the Llama family (Llama 3, Qwen2, Qwen3, Mistral): see test-utils/parity.ts.
import { parityCase } from './test-utils/parity.ts';

parityCase({ arch: 'llama' });
parityCase({ arch: 'qwen2' });
parityCase({ arch: 'qwen3' });
parityCase({ arch: 'mistral' });
