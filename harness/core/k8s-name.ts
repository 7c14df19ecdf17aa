/** A Kubernetes object name (RFC 1123 label): what --namespace, --cluster-policy and fleet job's names accept. */
export const K8S_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
