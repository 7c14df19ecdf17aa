/**
 * Triton's config.pbtxt checked as Triton reads it: protobuf text format parsed into the messages of
 * inference.ModelConfig. The fields, their types and enums are model_config.proto's
 * (github.com/triton-inference-server/common, protobuf/model_config.proto): an unknown field, a
 * value of the wrong type, an enum value the proto lacks or a singular field given twice is an error,
 * as protobuf's text parser makes it. The messages gpushare never writes are accepted unchecked.
 */

type Scalar = { kind: 'string'; value: string } | { kind: 'number'; value: number } | { kind: 'ident'; value: string };
export type TextValue = Scalar | { kind: 'message'; value: TextMessage };
export type TextMessage = Array<{ field: string; value: TextValue }>;

/** Protobuf text format: fields `name: value`, `name { … }`, `name [ … ]`; `#` comments; `,` or `;` between. */
export function parseTextFormat(text: string): TextMessage {
  const tokens = [...text.replace(/#[^\n]*/g, '').matchAll(/"(?:[^"\\\n]|\\.)*"|[{}[\]:,;]|[^\s{}[\]:,;"]+/g)].map(
    (m) => m[0],
  );
  let at = 0;
  const peek = () => tokens[at];
  const take = (want?: string) => {
    const token = tokens[at++];
    if (token === undefined || (want !== undefined && token !== want))
      throw new Error(`expected ${want ?? 'a token'} at token ${at}, got ${token ?? 'the end'}`);
    return token;
  };
  const scalar = (token: string): Scalar => {
    if (token.startsWith('"')) return { kind: 'string', value: JSON.parse(token) as string };
    if (/^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(token)) return { kind: 'number', value: Number(token) };
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(token)) return { kind: 'ident', value: token };
    throw new Error(`not a value: ${token}`);
  };
  const message = (end: string | undefined): TextMessage => {
    const fields: TextMessage = [];
    while (peek() !== end) {
      const field = take();
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field)) throw new Error(`not a field name: ${field}`);
      const colon = peek() === ':';
      if (colon) take(':');
      const value = (): TextValue => {
        if (peek() === '{') {
          take('{');
          const inner = message('}');
          take('}');
          return { kind: 'message', value: inner };
        }
        return scalar(take());
      };
      if (peek() === '[') {
        take('[');
        while (peek() !== ']') {
          fields.push({ field, value: value() });
          if (peek() === ',') take(',');
        }
        take(']');
      } else {
        if (!colon && peek() !== '{') throw new Error(`field ${field}: a scalar needs ":"`);
        fields.push({ field, value: value() });
      }
      if (peek() === ',' || peek() === ';') take();
    }
    return fields;
  };
  const parsed = message(undefined);
  return parsed;
}

type FieldType =
  | 'string'
  | 'int32'
  | 'int64'
  | 'uint32'
  | 'bool'
  | { enum: readonly string[] }
  | { message: string }
  | { map: true };
interface Field {
  type: FieldType;
  repeated?: boolean;
}

const DATA_TYPE = [
  'TYPE_INVALID',
  'TYPE_BOOL',
  'TYPE_UINT8',
  'TYPE_UINT16',
  'TYPE_UINT32',
  'TYPE_UINT64',
  'TYPE_INT8',
  'TYPE_INT16',
  'TYPE_INT32',
  'TYPE_INT64',
  'TYPE_FP16',
  'TYPE_FP32',
  'TYPE_FP64',
  'TYPE_STRING',
  'TYPE_BF16',
] as const;

/** The messages of model_config.proto that gpushare writes, field by field; others by name only. */
const MESSAGES: Record<string, Record<string, Field> | 'unchecked'> = {
  ModelConfig: {
    name: { type: 'string' },
    platform: { type: 'string' },
    backend: { type: 'string' },
    runtime: { type: 'string' },
    version_policy: { type: { message: 'ModelVersionPolicy' } },
    max_batch_size: { type: 'int32' },
    input: { type: { message: 'ModelInput' }, repeated: true },
    output: { type: { message: 'ModelOutput' }, repeated: true },
    batch_input: { type: { message: 'BatchInput' }, repeated: true },
    batch_output: { type: { message: 'BatchOutput' }, repeated: true },
    optimization: { type: { message: 'ModelOptimizationPolicy' } },
    dynamic_batching: { type: { message: 'ModelDynamicBatching' } },
    sequence_batching: { type: { message: 'ModelSequenceBatching' } },
    ensemble_scheduling: { type: { message: 'ModelEnsembling' } },
    instance_group: { type: { message: 'ModelInstanceGroup' }, repeated: true },
    default_model_filename: { type: 'string' },
    cc_model_filenames: { type: { map: true }, repeated: true },
    metric_tags: { type: { map: true }, repeated: true },
    parameters: { type: { map: true }, repeated: true },
    model_warmup: { type: { message: 'ModelWarmup' }, repeated: true },
    model_operations: { type: { message: 'ModelOperations' } },
    model_transaction_policy: { type: { message: 'ModelTransactionPolicy' } },
    model_repository_agents: { type: { message: 'ModelRepositoryAgents' } },
    response_cache: { type: { message: 'ModelResponseCache' } },
    model_metrics: { type: { message: 'ModelMetrics' } },
  },
  ModelInput: {
    name: { type: 'string' },
    data_type: { type: { enum: DATA_TYPE } },
    format: { type: { enum: ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'] } },
    dims: { type: 'int64', repeated: true },
    reshape: { type: { message: 'ModelTensorReshape' } },
    is_shape_tensor: { type: 'bool' },
    allow_ragged_batch: { type: 'bool' },
    optional: { type: 'bool' },
    is_non_linear_format_io: { type: 'bool' },
  },
  ModelOutput: {
    name: { type: 'string' },
    data_type: { type: { enum: DATA_TYPE } },
    dims: { type: 'int64', repeated: true },
    reshape: { type: { message: 'ModelTensorReshape' } },
    label_filename: { type: 'string' },
    is_shape_tensor: { type: 'bool' },
    is_non_linear_format_io: { type: 'bool' },
  },
  ModelInstanceGroup: {
    name: { type: 'string' },
    kind: { type: { enum: ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'] } },
    count: { type: 'int32' },
    rate_limiter: { type: { message: 'ModelRateLimiter' } },
    gpus: { type: 'int32', repeated: true },
    secondary_devices: { type: { message: 'SecondaryDevice' }, repeated: true },
    profile: { type: 'string', repeated: true },
    passive: { type: 'bool' },
    host_policy: { type: 'string' },
  },
  ModelTensorReshape: { shape: { type: 'int64', repeated: true } },
};

const INT_RANGE: Record<string, [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/** The errors of `message` as the proto's `type` (empty: it parses). */
export function checkMessage(message: TextMessage, type = 'ModelConfig', where = type): string[] {
  const spec = MESSAGES[type];
  if (spec === undefined || spec === 'unchecked') return [];
  const errors: string[] = [];
  const seen = new Set<string>();
  for (const { field, value } of message) {
    const f = spec[field];
    const at = `${where}.${field}`;
    if (!f) {
      errors.push(`${at}: no such field in ${type}`);
      continue;
    }
    if (!f.repeated && seen.has(field)) errors.push(`${at}: a singular field given twice`);
    seen.add(field);
    const t = f.type;
    if (typeof t === 'string') {
      if (t === 'string' && value.kind !== 'string') errors.push(`${at}: needs a string`);
      if (t === 'bool' && !(value.kind === 'ident' && ['true', 'false'].includes(value.value)))
        errors.push(`${at}: needs true or false`);
      if (t in INT_RANGE) {
        const [lo, hi] = INT_RANGE[t] as [number, number];
        if (value.kind !== 'number' || !Number.isInteger(value.value) || value.value < lo || value.value > hi)
          errors.push(`${at}: needs an ${t}`);
      }
    } else if ('enum' in t) {
      if (value.kind !== 'ident' || !t.enum.includes(value.value))
        errors.push(`${at}: ${value.value} is not one of ${t.enum.join(', ')}`);
    } else if ('message' in t) {
      if (value.kind !== 'message') errors.push(`${at}: needs a message`);
      else errors.push(...checkMessage(value.value, t.message, at));
    } else if (value.kind !== 'message') errors.push(`${at}: a map entry needs { key: … value: … }`);
  }
  return errors;
}

/** What Triton's model_config_utils refuses of the fields gpushare sets (counts, GPUs, dims, names). */
export function checkTritonRules(message: TextMessage): string[] {
  const errors: string[] = [];
  const one = (m: TextMessage, field: string) => m.find((f) => f.field === field)?.value;
  const all = (m: TextMessage, field: string) => m.filter((f) => f.field === field).map((f) => f.value);
  const name = one(message, 'name');
  if (name?.kind !== 'string' || name.value === '') errors.push('name: must be given');
  const batch = one(message, 'max_batch_size');
  if (batch?.kind === 'number' && batch.value < 0) errors.push('max_batch_size: must be 0 or more');
  for (const group of all(message, 'instance_group')) {
    if (group.kind !== 'message') continue;
    const count = one(group.value, 'count');
    if (count?.kind === 'number' && count.value < 1) errors.push('instance_group.count: must be at least 1');
    for (const gpu of all(group.value, 'gpus'))
      if (gpu.kind === 'number' && gpu.value < 0) errors.push('instance_group.gpus: a GPU index is 0 or more');
  }
  for (const io of [...all(message, 'input'), ...all(message, 'output')]) {
    if (io.kind !== 'message') continue;
    const dims = all(io.value, 'dims');
    if (dims.length === 0) errors.push('input/output: dims must be given');
    for (const d of dims)
      if (d.kind === 'number' && (d.value === 0 || d.value < -1))
        errors.push(`input/output.dims: ${d.value} is neither -1 nor a size`);
  }
  return errors;
}
