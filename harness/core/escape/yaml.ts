/**
 * YAML as every reader takes it: a string that a YAML 1.1 reader (PyYAML, and the reader kubectl uses)
 * would resolve to something else (on, off, yes, no, y, n, ~, 0x10, 010, 1:20, <<, =) or a YAML 1.2
 * reader would (true, null, 1e3, 0o10) is quoted; a string holding an unprintable character is double
 * quoted with it escaped (a byte order mark, NEL or a C1 control raw would be dropped, read as a line
 * break or refused); every other string stays plain.
 */
import { type CreateNodeOptions, Document, Scalar, type ScalarTag, Schema, type ToStringOptions, visit } from 'yaml';
import { escapedChar, UNPRINTABLE } from './unprintable.js';

/**
 * PyYAML resolves a plain `=` to the "value" type, which safe_load refuses: quoted, like the YAML 1.1
 * schema's own types, whose tests the yaml library applies when it writes a plain string.
 */
const VALUE_TAG: ScalarTag = { tag: 'tag:yaml.org,2002:value', default: true, test: /^=$/, resolve: (s) => s };
const YAML_11_TAGS = [...new Schema({ schema: 'yaml-1.1' }).tags, VALUE_TAG];
/** An unprintable character but a line feed (a multi-line string is written as a block, which keeps its line feeds). */
const HAS_UNPRINTABLE = new RegExp(`(?!\\n)${UNPRINTABLE.source}`, 'u');
/**
 * A line of only spaces or tabs in a multi-line string: a block scalar reads such a line as empty (the yaml library
 * writes " \n" as a block that reads back as "\n"), so the string is double quoted instead.
 */
const HAS_BLANK_LINE = /(^|\n)[ \t]+(\n|$)/;

/** `value` as a YAML document (1.2, the yaml library's default), with no string that reads as another type under 1.1. */
export function yamlText(value: unknown, options: CreateNodeOptions & ToStringOptions = {}): string {
  const doc = new Document(value, { ...options, compat: YAML_11_TAGS });
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string') return;
      const multiLine = node.value.includes('\n');
      if (HAS_UNPRINTABLE.test(node.value) || (multiLine && HAS_BLANK_LINE.test(node.value)))
        node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  // The library escapes C0 controls in double quotes, as JSON does; every other unprintable there too.
  return doc.toString(options).replace(UNPRINTABLE, (char) => (char === '\n' ? char : escapedChar(char)));
}
