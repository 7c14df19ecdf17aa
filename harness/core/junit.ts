/** JUnit XML as CI systems read it: one testcase, and the document around the testcases. */
import { xmlAttr, xmlText } from './escape/xml.js';

/** One testcase: its outcome, and for a failure, error or skip why (`detail` null: an empty element). */
export type JunitCase = { classname: string; name: string } & (
  | { outcome: 'passed' }
  | { outcome: 'skipped'; message: string }
  | { outcome: 'failure' | 'error'; type: string; message: string; detail: string | null }
);

function testcase(c: JunitCase): string {
  const body =
    c.outcome === 'passed'
      ? ''
      : c.outcome === 'skipped'
        ? `<skipped message="${xmlAttr(c.message)}"/>`
        : `<${c.outcome} type="${xmlAttr(c.type)}" message="${xmlAttr(c.message)}"${c.detail === null ? '/>' : `>${xmlText(c.detail)}</${c.outcome}>`}`;
  return `    <testcase classname="${xmlAttr(c.classname)}" name="${xmlAttr(c.name)}" time="0">${body}</testcase>`;
}

/** The XML document of one suite, `suite`, under `testsuites` named `title`, with the counts CI systems show. */
export function junitDocument(title: string, suite: string, cases: readonly JunitCase[]): string {
  const count = (outcome: JunitCase['outcome']) => cases.filter((c) => c.outcome === outcome).length;
  const attrs = `tests="${cases.length}" failures="${count('failure')}" errors="${count('error')}" skipped="${count('skipped')}"`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xmlAttr(title)}" ${attrs}>`,
    `  <testsuite name="${xmlAttr(suite)}" ${attrs}>`,
    ...cases.map(testcase),
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
