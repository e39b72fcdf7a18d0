import { describe, expect, it } from 'vitest';
import { gateDecision, RETENTION_TOLERANCE, wilson, type GateMetrics } from './gate.ts';

const m = (o: Partial<GateMetrics>): GateMetrics => ({ scope: 'heldout', heldout: 20, correct: 16, accuracy: 0.8, previousAccuracy: null, accuracyCi: null, kl: 0.01, probes: 8, klBudget: 0.1, tolerance: RETENTION_TOLERANCE, ...o });

describe('the eval gate', () => {
  it('accepts above chance within the KL budget, and names its scope', () => {
    const first = gateDecision(m({ scope: 'trained' }));
    expect(first.accept).toBe(true);
    expect(first.reason).toMatch(/turns it trained on/);
    expect(gateDecision(m({})).reason).toMatch(/20 older rated turns/);
  });

  it('rejects at or below chance, over the KL budget, or with no scored turn', () => {
    expect(gateDecision(m({ accuracy: 0.5 })).accept).toBe(false);
    expect(gateDecision(m({ kl: 0.2 })).reason).toMatch(/exceeds the preset's budget 0.1/);
    expect(gateDecision(m({ heldout: 0, accuracy: null })).accept).toBe(false);
  });

  it('on older turns, keeps within the tolerance of the active adapter (which trained on them too)', () => {
    expect(gateDecision(m({ accuracy: 0.9, previousAccuracy: 0.9 })).accept).toBe(true);
    expect(gateDecision(m({ accuracy: 0.9 - RETENTION_TOLERANCE + 1e-9, previousAccuracy: 0.9 })).accept).toBe(true);
    const worse = gateDecision(m({ accuracy: 0.8, previousAccuracy: 0.9 }));
    expect(worse.accept).toBe(false);
    expect(worse.reason).toMatch(/fell below the active adapter's 0.900/);
  });

  it('Wilson interval: 8 of 10 is [0.49, 0.94] (Wilson 1927, z = 1.96)', () => {
    const [lo, hi] = wilson(8, 10);
    expect(lo).toBeCloseTo(0.4902, 3);
    expect(hi).toBeCloseTo(0.9433, 3);
  });
});
