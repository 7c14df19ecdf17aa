/** The README of plan's files for the in-process option: what each file is, and how the pieces fit. */
import { mdFence, mdText } from '../core/escape/markdown.js';
import type { ArtifactFile } from './bundle.js';
import { type InProcessServer, MODEL_REPOSITORY_CLAIM, modelNames, TRITON_IMAGE } from './triton.js';

export function inProcessIndex(planText: string, server: InProcessServer, files: ArtifactFile[]): string {
  const names = modelNames(server.models);
  const first = names[0] ?? '';
  const last = names[names.length - 1] ?? '';
  const others = files.filter((f) => !f.name.startsWith('triton/'));
  const green =
    server.mode === 'green'
      ? '\nTriton has no setting for green contexts: its models share every SM, as in-process streams do. The SM split gpushare measured needs a server that makes a green context per model (`gpushare_protocol.serve` with the settings in `gpushare-in-process.env`).\n'
      : '';
  return `# gpushare plan

${mdFence(planText)}
One process serves every model: no device-plugin sharing, MPS daemon or MIG geometry. As gpushare measured it, each model ran as a tenant of one process, on a CUDA stream and a host thread of its own, all in one CUDA context on GPU 0. A multi-model server does the same:

- [\`triton/\`](triton/): a Triton model repository, ${mdText(first)} to ${mdText(last)}, one \`config.pbtxt\` each: the PyTorch backend (its instances run inside the server process), one instance per model (\`instance_group [{ count: 1, kind: KIND_GPU, gpus: [0] }]\`). Put each model's TorchScript file at \`<model>/1/model.pt\` and set its input and output tensors.
- [\`gpushare-triton-deployment.yaml\`](gpushare-triton-deployment.yaml): the Deployment of that one pod (\`${TRITON_IMAGE}\`, one whole GPU, one replica, \`Recreate\` updates), the repository mounted from the claim \`${MODEL_REPOSITORY_CLAIM}\`; its annotations carry the plan's numbers.
${others
  .filter((f) => f.name !== 'gpushare-triton-deployment.yaml')
  .map((f) => `- [\`${f.name}\`](${f.name}): the settings gpushare's own helper ran with, to measure this layout again`)
  .join('\n')}
${green}
## Before you deploy: what gpushare cannot know

1. Your models: each \`triton/<model>/1/model.pt\` (a TorchScript file), and in each \`config.pbtxt\` its input and output tensors. The \`input\` and \`output\` there are placeholders, marked FILL IN (\`INPUT__0\`, \`OUTPUT__0\`, \`TYPE_FP16\`, \`dims: [ -1 ]\`): set each name, data type and shape to your model's.
2. The model repository's storage: a PersistentVolumeClaim named \`${MODEL_REPOSITORY_CLAIM}\` holding \`triton/\` with every model.pt in it. The Deployment mounts it read-only; gpushare writes no claim, since its size and storage class are your cluster's.
3. The image: \`${TRITON_IMAGE}\` is a placeholder release. Use the Triton release whose PyTorch your models were saved with (NVIDIA's framework support matrix lists them).
`;
}
