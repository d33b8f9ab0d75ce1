/**
 * What src/roles/bridge/partition-run.ts handOver() stands on: kafkajs keeps a partition's pause in its subscription
 * state across assignments. A partition paused (parked, or its window full) when it is revoked is paused again the
 * moment it is assigned back — never fetched, silently — unless the member that paused it lifts the pause as it hands
 * it over. The failover lane's rolling restart met exactly that: two partitions parked at a revocation, assigned back
 * 17 s later, not read for the next 70 s. If a kafkajs release changes this, this file says so.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
interface SubscriptionState {
  assign(tps: { topic: string; partitions: number[] }[]): void;
  pause(tps: { topic: string; partitions?: number[] }[]): void;
  resume(tps: { topic: string; partitions?: number[] }[]): void;
  paused(): { topic: string; partitions: number[] }[];
}
const SubscriptionStateClass = require('kafkajs/src/consumer/subscriptionState.js') as new () => SubscriptionState;

describe("kafkajs's subscription state", () => {
  it('keeps a pause through a revocation and an assignment back; a resume while unassigned lifts it', () => {
    const state = new SubscriptionStateClass();
    state.assign([{ topic: 'orders', partitions: [2, 3, 4] }]);
    state.pause([{ topic: 'orders', partitions: [2] }]);
    state.assign([{ topic: 'orders', partitions: [3] }]);
    state.assign([{ topic: 'orders', partitions: [2, 3, 4] }]);
    expect(state.paused()).toEqual([{ topic: 'orders', partitions: [2] }]);

    state.assign([{ topic: 'orders', partitions: [3] }]);
    state.resume([{ topic: 'orders', partitions: [2] }]);
    state.assign([{ topic: 'orders', partitions: [2, 3, 4] }]);
    expect(state.paused()).toEqual([]);
  });
});
