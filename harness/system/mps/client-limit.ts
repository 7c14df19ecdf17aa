/**
 * Clients one MPS server accepts per GPU on Volta and later (NVIDIA's MPS documentation; the device
 * plugin's limit on MPS replicas; gpushare probe's client-limit claim measures it): the one statement of
 * it, for the fleet file, serve's --copies, the fleet's pre-check and plan.
 */
export const MPS_CLIENT_LIMIT = 48;
