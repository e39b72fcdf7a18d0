// The wizard's hardware step: CPU, memory, GPUs the OS shows, the ONNX Runtime execution providers of this build, and
// where `training.device` auto would train (its probes, node/engine/device.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { GpuInfo, HardwareInfo } from '../../common/system.ts';
import { chooseDevice } from '../engine/device.ts';

// PCI vendor ids (https://pcisig.com/membership/member-companies; the ones with consumer GPUs).
const PCI_VENDORS: Record<string, string> = { '0x10de': 'NVIDIA', '0x1002': 'AMD', '0x8086': 'Intel', '0x5143': 'Qualcomm', '0x1af4': 'virtio' };

/** GPUs as Linux lists them: /sys/class/drm/cardN/device/vendor, plus the NVIDIA driver's own list. */
export function linuxGpus(sysRoot = '/'): GpuInfo[] {
  const out: GpuInfo[] = [];
  const drm = path.join(sysRoot, 'sys/class/drm');
  let cards: string[] = [];
  try {
    cards = readdirSync(drm).filter((n) => /^card\d+$/.test(n));
  } catch {
    // no DRM (a container, a server without graphics)
  }
  for (const card of cards) {
    const vendorFile = path.join(drm, card, 'device/vendor');
    try {
      const id = readFileSync(vendorFile, 'utf8').trim().toLowerCase();
      out.push({ vendor: PCI_VENDORS[id] ?? `PCI vendor ${id}`, evidence: vendorFile });
    } catch {
      // a card without a PCI device (simple framebuffer)
    }
  }
  const nvidia = path.join(sysRoot, 'proc/driver/nvidia/gpus');
  if (existsSync(nvidia) && !out.some((g) => g.vendor === 'NVIDIA')) {
    for (const bus of readdirSync(nvidia)) out.push({ vendor: 'NVIDIA', evidence: path.join(nvidia, bus) });
  }
  return out;
}

/** ONNX Runtime's providers (cpu, webgpu, cuda, …); `bundled: false` means an extra install step (TOOLCHAIN.md). */
async function ortProviders(): Promise<{ name: string; bundled: boolean }[]> {
  // Loaded on demand: the native binding is not needed by the core until a wizard asks.
  const ort = (await import('onnxruntime-node')) as unknown as { listSupportedBackends?: () => { name: string; bundled: boolean }[] };
  return ort.listSupportedBackends?.().map((b) => ({ name: b.name, bundled: b.bundled })) ?? [{ name: 'cpu', bundled: true }];
}

export async function detectHardware(): Promise<HardwareInfo> {
  const cpus = os.cpus();
  return {
    platform: os.platform(),
    arch: os.arch(),
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpuCores: os.availableParallelism(),
    memoryBytes: os.totalmem(),
    freeMemoryBytes: os.freemem(),
    gpus: os.platform() === 'linux' ? linuxGpus() : [],
    providers: await ortProviders(),
    device: await chooseDevice('auto'),
  };
}
