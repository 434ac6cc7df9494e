// The examples' capability set (README.md, "Governed gateways", prefix
// `/gateway`): the domain router's devices (dev-1 …), shared with `/rpc`,
// behind the same gateway contract as `/capabilities`, with the outcomes
// the governed-bridge tests need (failed, cancelled, outcome unknown).

import { z } from 'zod';
import { disableDevices } from './domain.mjs';

/** A `failed` outcome's error, thrown by a capability's `run`. */
function failure(code, message, retryable = false) {
  return { gatewayFailure: { code, message, retryable } };
}

/** The capabilities over `state.devices` (the domain router's devices). */
export function examplesCapabilities(state) {
  return [
    {
      id: 'devices.disable',
      description: 'Disable devices',
      input: z.strictObject({ deviceIds: z.array(z.string()).min(1), reason: z.string().optional() }),
      sideEffect: 'write',
      risk: 'medium',
      tags: ['devices'],
      run: (input) => {
        const result = disableDevices(state, input.deviceIds);
        if (result.error === 'NOT_FOUND') throw failure('EXECUTION_FAILED', `Device ${result.deviceId} not found`);
        if (result.error === 'FORBIDDEN') throw failure('FORBIDDEN', 'The operation is not permitted.');
        return { disabled: result.disabled };
      },
    },
    {
      id: 'devices.locate',
      description: 'Locate a device',
      input: z.strictObject({ deviceId: z.string() }),
      sideEffect: 'read',
      risk: 'low',
      tags: ['devices'],
      run: (input) => {
        switch (input.deviceId) {
          case 'dev-locked':
            throw failure('FORBIDDEN', 'The operation is not permitted.');
          case 'dev-3':
            throw failure('EXECUTION_FAILED', 'The location provider is down', true);
          case 'dev-2':
            throw { cancelled: true };
          default:
            return { deviceId: input.deviceId, room: 'Lobby' };
        }
      },
    },
    {
      id: 'devices.purge',
      description: 'Permanently delete devices',
      input: z.strictObject({ deviceIds: z.array(z.string()).min(1) }),
      sideEffect: 'destructive',
      risk: 'critical',
      tags: ['devices'],
      approval: { types: ['irreversible'] },
      run: (input) => {
        const purged = input.deviceIds.filter((id) => state.devices.delete(id));
        return { purged };
      },
    },
    {
      id: 'mail.send',
      description: 'Send an email',
      input: z.strictObject({ to: z.email(), subject: z.string() }),
      sideEffect: 'external',
      risk: 'medium',
      tags: ['mail'],
      run: () => {
        throw { afterEffect: true }; // the mail provider timed out after sending
      },
    },
  ];
}
