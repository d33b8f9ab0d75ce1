/**
 * When a waiting order may move to another version of its worker deployment (upgrade on continue-as-new): only
 * forward. Temporal tells a pinned run that its target version changed whenever the deployment's routing points
 * elsewhere — after a promotion, but also after a rollback or while a ramp sends a share of new runs to a version.
 * The carried state (the continue-as-new input) is a contract a version keeps with the versions before it, which the
 * replay gate and test/integration/upgrade-on-continue-as-new.int.test.ts hold; no version is built to read the state of
 * a version after it. So a run moves only to the deployment's current version, only when that version was created
 * after the run's own, and only while nothing ramps (a continue-as-new then could land on the ramping version). A
 * rollback therefore leaves waiting orders on the newer version, where they finish (its workers keep running; if they
 * stop, fulfilment_orders_pinned_without_workers says so).
 */
import type { DeploymentView } from './routing.js';

export interface VersionMove {
  move: boolean;
  /** Why not (or where to), for the order's notes. */
  why: string;
  /** False when the refusal may change at once (the routing not known, or not yet showing the change): ask again. */
  settled: boolean;
}

/** The rule, on the worker's last reading of the deployment (`view`) for a run pinned to `own`. */
export function versionMove(view: DeploymentView | undefined, own: string | undefined): VersionMove {
  if (!view || !own) return { move: false, why: 'the deployment’s routing is not known here', settled: false };
  if (view.ramping)
    return {
      move: false,
      why: `version ${view.ramping.buildId} is ramping: waiting orders stay until the ramp ends`,
      settled: true,
    };
  const current = view.current;
  if (!current || current === own) return { move: false, why: `version ${own} is current`, settled: false };
  const created = (buildId: string) => view.versions.find((v) => v.buildId === buildId)?.createdAt?.getTime();
  const [ownAt, currentAt] = [created(own), created(current)];
  if (ownAt === undefined || currentAt === undefined)
    return { move: false, why: `the creation of version ${own} or ${current} is not known`, settled: false };
  if (currentAt <= ownAt)
    return {
      move: false,
      why: `current version ${current} is older than ${own} (a rollback): the order stays`,
      settled: true,
    };
  return { move: true, why: `moving to the newer current version ${current}`, settled: true };
}
