// In-memory state of one peer process (fresh per process): the domain
// router's devices (shared with the `/gateway` gateway) and the id source
// both gateways draw approval and execution ids from.

/** The initial devices (README.md, "Domain router"), in list order. */
export const SEED_DEVICES = Object.freeze([
  { id: 'dev-1', name: 'Lobby camera', status: 'active' },
  { id: 'dev-2', name: 'Door sensor', status: 'active' },
  { id: 'dev-3', name: 'Old router', status: 'disabled' },
  { id: 'dev-locked', name: 'Core switch', status: 'active' },
]);

/** The device whose disabling is forbidden. */
export const LOCKED_DEVICE_ID = 'dev-locked';

/**
 * Approval ids `appr-1`, `appr-2`, … and execution ids `exec-1`, `exec-2`,
 * … per process, shared by every gateway of the process (so an approval id
 * names one approval of one gateway).
 */
export function createIds() {
  let approvals = 0;
  let executions = 0;
  return {
    approval: () => `appr-${++approvals}`,
    execution: () => `exec-${++executions}`,
  };
}

export function createState() {
  return {
    /** id → { id, name, status }, insertion order = list order. */
    devices: new Map(SEED_DEVICES.map((d) => [d.id, { ...d }])),
    ids: createIds(),
  };
}
