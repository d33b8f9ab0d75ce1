/** The order workflow's settings from the configuration, the same for every starter (the bridge, a redelivery). */
import type { OrderWorkflowSettings } from '../../workflows/api.js';
import type { Config } from '../base/config.js';

export function workflowSettings(config: Config): OrderWorkflowSettings {
  return {
    cancelGraceSeconds: config.CANCEL_GRACE_SECONDS,
    lingerSeconds: config.ORDER_LINGER_SECONDS,
    shipmentDeadlineSeconds: config.ORDER_SHIPMENT_DEADLINE_SECONDS,
    ...(config.ORDER_CONTINUE_AS_NEW_AFTER_EVENTS !== undefined
      ? { continueAsNewAfterEvents: config.ORDER_CONTINUE_AS_NEW_AFTER_EVENTS }
      : {}),
  };
}
