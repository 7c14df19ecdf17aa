/**
 * YAML as every reader takes it: a string that a YAML 1.1 reader (PyYAML, and the reader kubectl uses)
 * would resolve to something else (on, off, yes, no, y, n, ~, 0x10, 010, 1:20, <<, =) or a YAML 1.2
 * reader would (true, null, 1e3, 0o10) is quoted; every other string stays plain.
 */
import { type CreateNodeOptions, type ScalarTag, Schema, stringify, type ToStringOptions } from 'yaml';

/**
 * PyYAML resolves a plain `=` to the "value" type, which safe_load refuses: quoted, like the YAML 1.1
 * schema's own types, whose tests the yaml library applies when it writes a plain string.
 */
const VALUE_TAG: ScalarTag = { tag: 'tag:yaml.org,2002:value', default: true, test: /^=$/, resolve: (s) => s };
const YAML_11_TAGS = [...new Schema({ schema: 'yaml-1.1' }).tags, VALUE_TAG];

/** `value` as a YAML document (1.2, the yaml library's default), with no string that reads as another type under 1.1. */
export function yamlText(value: unknown, options: CreateNodeOptions & ToStringOptions = {}): string {
  return stringify(value, { ...options, compat: YAML_11_TAGS });
}
