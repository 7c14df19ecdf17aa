/**
 * Text for HTML: a run-controlled string reaches an HTML page as the text it is, in element content or
 * a quoted attribute, never as markup; unprintable characters shown as their escapes, as everywhere.
 */
import MarkdownIt from 'markdown-it';
import { shownEscaped } from './unprintable.js';

const HTML_SPECIAL: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text in an element or a double-quoted attribute. */
export function htmlText(text: string): string {
  return shownEscaped(text).replace(/[&<>"']/g, (c) => HTML_SPECIAL[c] as string);
}

/** An inlined SVG image: the only data URL a page of ours links to. */
const SVG_DATA_URL = /^data:image\/svg\+xml;base64,[A-Za-z0-9+/]+=*$/;

/** An SVG document as a data URL for an `<img>`: inside an image, no script of it runs, and its text is no markup of the page. */
export function svgDataUrl(svg: string): string {
  return `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
}

/**
 * Markdown already escaped for markdown (core/escape/markdown.ts) rendered as HTML: raw HTML in it is
 * shown as text (markdown-it's html: false), links are only those markdown-it allows (no javascript:)
 * and our inlined SVG images.
 */
function markdownRenderer(): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
  const allowed = md.validateLink.bind(md);
  md.validateLink = (url) => SVG_DATA_URL.test(url) || allowed(url);
  return md;
}

const STYLE = `body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;margin:1em 0;font-size:13px;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}code{font:12px ui-monospace,monospace;background:#f6f8fa;padding:1px 4px;border-radius:4px}
pre code{display:block;padding:8px;overflow-x:auto}img{max-width:100%;height:auto}h1,h2,h3{line-height:1.25}`;

/** One self-contained HTML page of a markdown report: its styles inline, its images data URLs. */
export function htmlPage(title: string, markdown: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${htmlText(title)}</title>
<style>
${STYLE}
</style>
</head>
<body>
${markdownRenderer().render(markdown)}</body>
</html>
`;
}
