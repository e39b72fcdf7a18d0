import type { DeviceChoice } from '../../src-main/common/system.ts';
import { deviceSentence } from '../store/training.ts';

/** Where a round trains (or trained), in one sentence; the probes' reasons for the CPU behind "Why not a GPU?". */
export function DeviceLine(props: { device: DeviceChoice | undefined; verb?: string }) {
  const sentence = deviceSentence(props.device, props.verb);
  if (sentence === null) return null;
  return (
    <>
      {sentence}
      {props.device?.reason != null && (
        <details className="device-why">
          <summary>Why not a GPU?</summary>
          <span className="small">{props.device.reason}</span>
        </details>
      )}
    </>
  );
}
