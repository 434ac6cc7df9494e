// In-memory state of one peer process (fresh per process): the devices, the
// approvals, and the governed gateway's receipts.

/** The initial devices (README.md, "Domain router"), in list order. */
export const SEED_DEVICES = Object.freeze([
  { id: 'dev-1', name: 'Lobby camera', status: 'active' },
  { id: 'dev-2', name: 'Door sensor', status: 'active' },
  { id: 'dev-3', name: 'Old router', status: 'disabled' },
  { id: 'dev-locked', name: 'Core switch', status: 'active' },
]);

/** The device whose disabling is forbidden. */
export const LOCKED_DEVICE_ID = 'dev-locked';

export function createState() {
  let approvalSeq = 0;
  let executionSeq = 0;
  return {
    /** id → { id, name, status }, insertion order = list order. */
    devices: new Map(SEED_DEVICES.map((d) => [d.id, { ...d }])),
    /** approvalId → { approvalId, decision: 'pending'|'approve'|'reject', invocationId? } */
    approvals: new Map(),
    /** invocationId → { capabilityId, input, receipt } (governed gateway) */
    invocations: new Map(),
    /** Opens a pending approval; ids are `appr-1`, `appr-2`, … per process. */
    newApproval(invocationId) {
      approvalSeq += 1;
      const approvalId = `appr-${approvalSeq}`;
      this.approvals.set(approvalId, { approvalId, decision: 'pending', invocationId });
      return approvalId;
    },
    /** Execution ids are `exec-1`, `exec-2`, … per process. */
    newExecutionId() {
      executionSeq += 1;
      return `exec-${executionSeq}`;
    },
  };
}
