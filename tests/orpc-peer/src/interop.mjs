// The interop capability set (README.md, "Governed gateways", prefix
// `/capabilities`): exactly the gateway a governed interop test meets —
// devices.list, devices.disable (with the "fail-after-effect" id) and
// devices.purge (approval required, type irreversible) over three devices
// of their own, d1 Milan, d2 Rome, d3 Turin.

import { z } from 'zod';

/** The interop devices at start, in list order. */
export const INTEROP_DEVICES = Object.freeze([
  { id: 'd1', city: 'Milan', enabled: true, purged: false },
  { id: 'd2', city: 'Rome', enabled: true, purged: false },
  { id: 'd3', city: 'Turin', enabled: true, purged: false },
]);

/** The device id whose disabling has its effect and then fails. */
export const FAIL_AFTER_EFFECT = 'fail-after-effect';

const DeviceIds = z.array(z.string()).min(1);

/** The capabilities, over a fresh copy of the interop devices. */
export function interopCapabilities() {
  const devices = new Map(INTEROP_DEVICES.map((d) => [d.id, { ...d }]));
  const capabilities = [
    {
      id: 'devices.list',
      description: 'List devices, optionally filtered by city',
      input: z.strictObject({ city: z.string().optional() }),
      sideEffect: 'read',
      risk: 'low',
      tags: ['devices'],
      run: (input) => ({
        items: [...devices.values()].filter((d) => input.city === undefined || d.city === input.city).map((d) => ({ ...d })),
      }),
    },
    {
      id: 'devices.disable',
      description: 'Disable the given devices',
      input: z.strictObject({ deviceIds: DeviceIds, reason: z.string().optional() }),
      sideEffect: 'write',
      risk: 'medium',
      tags: ['devices'],
      run: (input) => {
        for (const id of input.deviceIds) {
          const device = devices.get(id);
          if (device) device.enabled = false;
        }
        if (input.deviceIds.includes(FAIL_AFTER_EFFECT)) throw { afterEffect: true };
        return { disabled: input.deviceIds.length, deviceIds: [...input.deviceIds], at: new Date().toISOString() };
      },
    },
    {
      id: 'devices.purge',
      description: 'Permanently purge the given devices',
      input: z.strictObject({ deviceIds: DeviceIds }),
      sideEffect: 'destructive',
      risk: 'critical',
      tags: ['devices'],
      approval: { types: ['irreversible'] },
      run: (input) => {
        for (const id of input.deviceIds) {
          const device = devices.get(id);
          if (device) device.purged = true;
        }
        return { purged: input.deviceIds.length };
      },
    },
  ];
  return { capabilities, devices: () => [...devices.values()].map((d) => ({ ...d })) };
}
