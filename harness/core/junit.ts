/** JUnit XML as CI systems read it: the escaping, one testcase, and the document around the testcases. */

/** Escapes text for an XML attribute or element. */
export function xml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

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
        ? `<skipped message="${xml(c.message)}"/>`
        : `<${c.outcome} type="${xml(c.type)}" message="${xml(c.message)}"${c.detail === null ? '/>' : `>${xml(c.detail)}</${c.outcome}>`}`;
  return `    <testcase classname="${xml(c.classname)}" name="${xml(c.name)}" time="0">${body}</testcase>`;
}

/** The XML document of one suite, `suite`, under `testsuites` named `title`, with the counts CI systems show. */
export function junitDocument(title: string, suite: string, cases: readonly JunitCase[]): string {
  const count = (outcome: JunitCase['outcome']) => cases.filter((c) => c.outcome === outcome).length;
  const attrs = `tests="${cases.length}" failures="${count('failure')}" errors="${count('error')}" skipped="${count('skipped')}"`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(title)}" ${attrs}>`,
    `  <testsuite name="${xml(suite)}" ${attrs}>`,
    ...cases.map(testcase),
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
