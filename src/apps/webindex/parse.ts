/**
 * Document parsing: HTML, Markdown and plain text → title, text, outgoing links with anchor text,
 * and a content fingerprint. Pure and deterministic: the observers and the batch recomputation
 * both call it, so "incremental equals batch" tests the incremental maintenance, not the parser.
 *
 * Invariants:
 * - The fingerprint hashes exactly what the index shows of a document (title and normalized
 *   text), so two documents with one fingerprint are interchangeable in search results.
 * - Links are absolute `http(s):` or `file:` URLs without fragment, never the document itself
 *   (in-page anchors are not links between documents), one entry per target (anchor texts joined).
 * - Parsing takes time linear in the input, whatever a crawl returns: V8's regular expressions
 *   backtrack, so every pattern that scans to a closing delimiter either stops at the next opening
 *   one (a link's `[^[\]…]`, an autolink's `[^<>…]`) or is a scan of linear-scan.ts; runs of spaces
 *   a pattern could split two ways are taken whole (`(?=(\s*))\1`, an atomic group). 80 KB of `[`
 *   took 38 s before (docs/webindex.md › *Hostile documents*); parse.test.ts holds each case to a
 *   bound.
 * - A URL that is not valid percent-encoding still parses: its file name is the fallback title as is.
 * - Only the first MAX_PARSED characters of a document are parsed. Linear is not enough when a
 *   crawl serves 50 MB (2.7 s of the worker's one JS thread for HTML); what the index keeps of a
 *   page (MAX_TEXT characters of text, MAX_LINKS links) fills far earlier on ordinary pages.
 */
import { createHash } from 'node:crypto';
import { replaceAngleTags, replaceSpans, spans, trimEndOf } from './linear-scan.js';
import type { KeyMode } from './key-mode.js';

export type { KeyMode };

export type DocType = 'md' | 'html' | 'text';

export interface ParsedDoc {
  readonly title: string;
  /** Whitespace-normalized text, at most MAX_TEXT characters. */
  readonly text: string;
  /** `[target, anchor]`, sorted by target, unique targets. */
  readonly links: readonly (readonly [string, string])[];
  /** 16 hex digits of SHA-1 over title and text. */
  readonly fingerprint: string;
}

export const MAX_TEXT = 32_000;
const MAX_TITLE = 120;
const MAX_ANCHOR = 200;
const MAX_LINKS = 500;
/** Characters (UTF-16 code units) of a document that are parsed; the rest is ignored. */
export const MAX_PARSED = 2 * 1024 * 1024;

/**
 * The part of a document's content that is parsed, decoding only as many bytes as it needs: each
 * UTF-16 code unit comes from at most 3 bytes of UTF-8, so 4 × MAX_PARSED bytes are enough, and a
 * character those bytes cut in two decodes past MAX_PARSED, where parseDocument cuts anyway.
 */
export function contentText(content: string | Uint8Array): string {
  if (typeof content === 'string') return content;
  const bytes = content.byteLength > 4 * MAX_PARSED ? content.subarray(0, 4 * MAX_PARSED) : content;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** The first MAX_PARSED characters, never ending in the first half of a surrogate pair. */
function parsedPart(content: string): string {
  if (content.length <= MAX_PARSED) return content;
  const last = content.charCodeAt(MAX_PARSED - 1);
  return content.slice(0, last >= 0xd800 && last <= 0xdbff ? MAX_PARSED - 1 : MAX_PARSED);
}

export function docTypeOf(url: string): DocType {
  const path = url.replace(/[?#].*$/, '').toLowerCase();
  if (/\.(md|markdown|mdown|mkd)$/.test(path)) return 'md';
  if (/\.(html?|xhtml)$/.test(path)) return 'html';
  return 'text';
}

/** Whitespace runs as one space, trimmed. */
export function collapse(s: string): string {
  // Only what changes is replaced (runs, and single whitespace chars other than a space), not
  // every single space: ~3× faster on prose, the same result (parse.test.ts compares).
  return s.replace(/\s{2,}|[^\S ]/g, ' ').trim();
}

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  copy: '©',
  reg: '®',
  mdash: '—',
  ndash: '–',
  hellip: '…',
};

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,8});/g, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? Number.parseInt(e.slice(2), 16) : Number.parseInt(e.slice(1), 10);
      return code > 0 && code < 0x110000 ? String.fromCodePoint(code) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

const COMMENT_OPEN = /<!--/g;
const COMMENT_CLOSE = /-->/g;

/** `s.replace(/<!--[\s\S]*?-->/g, ' ')`. */
function dropComments(s: string): string {
  return replaceSpans(s, COMMENT_OPEN, COMMENT_CLOSE, false, () => ' ');
}

function stripTags(s: string): string {
  return decodeEntities(replaceAngleTags(dropComments(s), ' '));
}

/** Resolves `href` against `base`; null for anything that is not a link to another document. */
export function resolveLink(href: string, base: string): string | null {
  const h = decodeEntities(href.trim());
  if (h === '' || h.startsWith('#')) return null;
  let u: URL;
  try {
    u = new URL(h, base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'file:') return null;
  u.hash = '';
  const out = u.href;
  if (out === base.replace(/#.*$/, '')) return null;
  return out.length > 2000 ? null : out;
}

class LinkSet {
  private readonly map = new Map<string, string[]>();
  constructor(private readonly base: string) {}
  add(href: string, anchor: string): void {
    const target = resolveLink(href, this.base);
    if (target === null) return;
    let list = this.map.get(target);
    if (list === undefined) {
      if (this.map.size >= MAX_LINKS) return;
      this.map.set(target, (list = []));
    }
    // What result() keeps of a target's anchors is their first MAX_ANCHOR characters: past them,
    // more anchors change nothing (and a page of many links to one target no longer costs a
    // search of its anchor list for each).
    if (list.reduce((n, x) => n + x.length + 3, 0) >= MAX_ANCHOR + 3) return;
    const a = collapse(anchor).slice(0, MAX_ANCHOR);
    if (a !== '' && !list.includes(a)) list.push(a);
  }
  result(): [string, string][] {
    return [...this.map.entries()]
      .map(([t, a]): [string, string] => [t, a.join(' | ').slice(0, MAX_ANCHOR)])
      .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  }
}

const BARE_URL = /\bhttps?:\/\/[^\s<>"'`)\]]+/g;

function addBareUrls(text: string, links: LinkSet): void {
  for (const m of text.matchAll(BARE_URL)) links.add(trimEndOf(m[0], '.,;:!?'), '');
}

// Openings and closings of the elements the parsers look into (linear-scan.ts `spans`).
const SCRIPT_OPEN = /<script\b/gi;
const SCRIPT_CLOSE = /<\/script\s*>/gi;
const STYLE_OPEN = /<style\b/gi;
const STYLE_CLOSE = /<\/style\s*>/gi;
const HEAD_OPEN = /<head\b/gi;
const HEAD_CLOSE = /<\/head\s*>/gi;
const TITLE_OPEN = /<title/gi;
const TITLE_CLOSE = /<\/title\s*>/gi;
const H1_OPEN = /<h1/gi;
const H1_CLOSE = /<\/h1\s*>/gi;
const A_OPEN = /<a\s/gi;
const A_CLOSE = /<\/a\s*>/gi;

/** The body of the first `<title…>…</title>` (or h1): `/<title[^>]*>([\s\S]*?)<\/title\s*>/i`'s group. */
function firstElement(s: string, open: RegExp, close: RegExp): string | undefined {
  return spans(s, open, close, true, 1)[0]?.body;
}

/** `/<body[^>]*>([\s\S]*)$/i.exec(s)?.[1]`: everything after the first `<body…>`. */
function afterBody(s: string): string | undefined {
  const at = s.search(/<body/i);
  if (at < 0) return undefined;
  const gt = s.indexOf('>', at + 5);
  return gt < 0 ? undefined : s.slice(gt + 1);
}

function parseHtml(content: string, url: string): { title: string; text: string; links: [string, string][] } {
  const noScripts = replaceSpans(dropComments(content), SCRIPT_OPEN, SCRIPT_CLOSE, false, () => ' ');
  const cleaned = replaceSpans(noScripts, STYLE_OPEN, STYLE_CLOSE, false, () => ' ');
  // `[^<>]`: an attribute scan stops at the next tag (a `<base` without `>` would scan to the end).
  const baseHref = /<base\s[^<>]*href\s*=\s*["']([^"'<>]+)["']/i.exec(cleaned)?.[1];
  const links = new LinkSet(baseHref !== undefined ? (resolveLink(baseHref, url) ?? url) : url);
  for (const a of spans(cleaned, A_OPEN, A_CLOSE, true)) {
    const href = /href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(a.tag);
    const h = href?.[1] ?? href?.[2] ?? href?.[3];
    if (h !== undefined) links.add(h, stripTags(a.body));
  }
  const titleTag = firstElement(cleaned, TITLE_OPEN, TITLE_CLOSE);
  const h1 = firstElement(cleaned, H1_OPEN, H1_CLOSE);
  const body = afterBody(cleaned) ?? cleaned;
  const text = collapse(stripTags(replaceSpans(body, HEAD_OPEN, HEAD_CLOSE, false, () => ' ', 1)));
  const title = collapse(stripTags(titleTag ?? h1 ?? ''));
  return { title, text, links: links.result() };
}

/**
 * An inline link `[anchor](href "title")`. The spaces around the destination are taken whole
 * (`(?=(\s*))\k<…>`: an atomic group), else `[x](` and a long run of spaces would be split every
 * way before failing; the second alternative is a title with an empty destination, the one match
 * splitting them could find.
 */
const INLINE_LINK =
  /\[(?<anchor>[^[\]\n]*)\]\((?:(?=(?<s1>\s*))\k<s1><?(?<href>[^)\s>[]*)>?(?:(?=(?<s2>\s+))\k<s2>(?:"[^"\n]*"|'[^'\n]*'))?(?=(?<s3>\s*))\k<s3>|\s+(?:"[^"\n]*"|'[^'\n]*')\s*)\)/g;

/**
 * `# Title #`: the heading's text without its closing run of spaces, tabs and `#` — the same as
 * `(.+?)[ \t#]*$`, whose lazy group retried that run at every character (quadratic in a line).
 */
const ATX_1 = /^ {0,3}#[ \t]+(.*[^ \t#\n\r\u2028\u2029]|.)[ \t#]*$/m;
const ATX_ANY = /^ {0,3}#{1,6}[ \t]+(.*[^ \t#\n\r\u2028\u2029]|.)[ \t#]*$/m;
/**
 * A setext heading. It starts after a newline (`(?<![^\n])`), not at every `^` of the multiline
 * flag, which also follows `\r`: in a long line of `\r`s each would have scanned to its end.
 */
const SETEXT = /(?<![^\n])([^\n]+)\n {0,3}(?:=+|-+)[ \t]*$/m;

/** Markdown inline syntax → plain text (images become their alt text, links their anchor). */
function mdInline(s: string): string {
  return stripTags(
    s
      .replace(/!\[([^[\]]*)\]\([^)[]*\)/g, '$1')
      .replace(/!\[([^[\]]*)\]\[[^[\]]*\]/g, '$1')
      .replace(/\[([^[\]]*)\]\([^)[]*\)/g, '$1')
      .replace(/\[([^[\]]*)\]\[[^[\]]*\]/g, '$1')
      .replace(/[*_`~]+/g, ''),
  );
}

function parseMarkdown(content: string, url: string): { title: string; text: string; links: [string, string][] } {
  const links = new LinkSet(url);
  // Fenced code is text (API names are worth finding) but never holds links.
  const parts = content.split(/^(?:```|~~~).*$/m);
  const prose = parts.filter((_, i) => i % 2 === 0).join('\n');
  const defs = new Map<string, string>();
  const withoutDefs = prose.replace(/^ {0,3}\[([^[\]\n]+)\]:[ \t]*<?([^\s>]+)>?.*$/gm, (_m, label: string, href: string) => {
    defs.set(label.trim().toLowerCase(), href);
    return '';
  });
  // Images first, so a badge inside a link leaves its alt text as the link's anchor.
  let s = withoutDefs.replace(/!\[([^[\]\n]*)\]\([^)[\n]*\)/g, '$1').replace(/!\[([^[\]\n]*)\]\[[^[\]\n]*\]/g, '$1');
  s = s.replace(INLINE_LINK, (...args: unknown[]) => {
    const { anchor, href } = args[args.length - 1] as { anchor: string; href: string | undefined };
    links.add(href ?? '', mdInline(anchor));
    return ` ${anchor} `;
  });
  s = s.replace(/\[([^[\]\n]+)\]\[([^[\]\n]*)\]/g, (m, anchor: string, ref: string) => {
    const href = defs.get((ref === '' ? anchor : ref).trim().toLowerCase());
    if (href === undefined) return m;
    links.add(href, mdInline(anchor));
    return ` ${anchor} `;
  });
  s = s.replace(/\[([^[\]\n]+)\](?![[(:])/g, (m, anchor: string) => {
    const href = defs.get(anchor.trim().toLowerCase());
    if (href === undefined) return m;
    links.add(href, mdInline(anchor));
    return ` ${anchor} `;
  });
  s = s.replace(/<(https?:\/\/[^<>\s]+)>/g, (_m, href: string) => {
    links.add(href, href);
    return ` ${href} `;
  });
  s = replaceSpans(s, A_OPEN, A_CLOSE, true, ({ tag, body }) => {
    const href = /href\s*=\s*(?:"([^"]*)"|'([^']*)')/i.exec(tag);
    const h = href?.[1] ?? href?.[2];
    if (h !== undefined) links.add(h, stripTags(body));
    return ` ${body} `;
  });
  addBareUrls(replaceAngleTags(s, ' '), links);
  // Title: the first ATX heading of level 1 (else any level), else a setext heading, else the first line.
  const atx1 = ATX_1.exec(content)?.[1];
  const atx = atx1 ?? ATX_ANY.exec(content)?.[1];
  const setext = SETEXT.exec(content)?.[1];
  const firstLine = /^[ \t]*(\S[^\n]*)$/m.exec(s)?.[1];
  const title = collapse(mdInline(atx ?? setext ?? firstLine ?? ''));
  const code = parts.filter((_, i) => i % 2 === 1).join('\n');
  const text = collapse(`${stripTags(s.replace(/^ {0,3}(?:#{1,6}|>|[-*+]|\d+\.)[ \t]+/gm, '').replace(/[*_`~|]+/g, ' '))} ${code}`);
  return { title, text, links: links.result() };
}

function parseText(content: string, url: string): { title: string; text: string; links: [string, string][] } {
  const links = new LinkSet(url);
  addBareUrls(content, links);
  const title = collapse(/^[ \t]*(\S[^\n]*)$/m.exec(content)?.[1] ?? '');
  return { title, text: collapse(content), links: links.result() };
}

export function fingerprint(title: string, text: string): string {
  return createHash('sha1').update(title).update('\u0000').update(text).digest('hex').slice(0, 16);
}

/** The URL's last path segment, percent-decoded where it is valid percent-encoding. */
function fileNameOf(url: string): string {
  const name =
    trimEndOf(url.replace(/[?#].*$/, ''), '/')
      .split('/')
      .pop() ?? url;
  try {
    return decodeURIComponent(name);
  } catch {
    return name; // `%` not followed by two hex digits, or bytes that are not UTF-8
  }
}

/**
 * Parses one fetched document (its first MAX_PARSED characters). `url` is its absolute URL (links
 * resolve against it).
 */
export function parseDocument(url: string, type: DocType, whole: string): ParsedDoc {
  const content = parsedPart(whole);
  const p = type === 'html' ? parseHtml(content, url) : type === 'md' ? parseMarkdown(content, url) : parseText(content, url);
  const fallback = fileNameOf(url);
  const title = (p.title || fallback).slice(0, MAX_TITLE);
  const text = p.text.slice(0, MAX_TEXT);
  return { title, text, links: p.links, fingerprint: fingerprint(title, text) };
}

/** Normalized URL key: no scheme, no `www.`, no trailing slash or index page, lower case. */
export function urlKey(url: string): string {
  return url
    .toLowerCase()
    .replace(/^[a-z]+:\/\//, '')
    .replace(/^www\./, '')
    .replace(/[?#].*$/, '')
    .replace(/\/(index\.html?)?$/, '');
}

/**
 * The clustering keys of a parsed document, sorted: `fp:<fingerprint>` always (exact duplicates);
 * with `content+url+title` also `url:<normalized URL>` and `title:<normalized title>` — the three
 * keys of the paper's benchmark. Documents sharing any key are in one cluster.
 */
export function clusterKeys(url: string, doc: ParsedDoc, mode: KeyMode): string[] {
  const keys = [`fp:${doc.fingerprint}`];
  if (mode === 'content+url+title') {
    keys.push(`url:${urlKey(url)}`);
    const t = collapse(doc.title.toLowerCase());
    if (t !== '') keys.push(`title:${t}`);
  }
  return keys.sort();
}
