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
 * - Every regular expression is linear (no nested quantifiers over the same characters): inputs
 *   are whatever a crawl returns.
 */
import { createHash } from 'node:crypto';

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

function stripTags(s: string): string {
  return decodeEntities(s.replace(/<!--[\s\S]*?-->/g, ' ').replace(/<[^>]*>/g, ' '));
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
  for (const m of text.matchAll(BARE_URL)) links.add(m[0].replace(/[.,;:!?]+$/, ''), '');
}

function parseHtml(content: string, url: string): { title: string; text: string; links: [string, string][] } {
  const cleaned = content
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<script\b[\s\S]*?<\/script\s*>/gi, ' ')
    .replace(/<style\b[\s\S]*?<\/style\s*>/gi, ' ');
  const baseHref = /<base\s[^>]*href\s*=\s*["']([^"']+)["']/i.exec(cleaned)?.[1];
  const links = new LinkSet(baseHref !== undefined ? (resolveLink(baseHref, url) ?? url) : url);
  for (const m of cleaned.matchAll(/<a\s([^>]*)>([\s\S]*?)<\/a\s*>/gi)) {
    const href = /href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(m[1] ?? '');
    const h = href?.[1] ?? href?.[2] ?? href?.[3];
    if (h !== undefined) links.add(h, stripTags(m[2] ?? ''));
  }
  const titleTag = /<title[^>]*>([\s\S]*?)<\/title\s*>/i.exec(cleaned)?.[1];
  const h1 = /<h1[^>]*>([\s\S]*?)<\/h1\s*>/i.exec(cleaned)?.[1];
  const bodyMatch = /<body[^>]*>([\s\S]*)$/i.exec(cleaned);
  const text = collapse(stripTags((bodyMatch?.[1] ?? cleaned).replace(/<head\b[\s\S]*?<\/head\s*>/i, ' ')));
  const title = collapse(stripTags(titleTag ?? h1 ?? ''));
  return { title, text, links: links.result() };
}

/** Markdown inline syntax → plain text (images become their alt text, links their anchor). */
function mdInline(s: string): string {
  return stripTags(
    s
      .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/!\[([^\]]*)\]\[[^\]]*\]/g, '$1')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
      .replace(/[*_`~]+/g, ''),
  );
}

function parseMarkdown(content: string, url: string): { title: string; text: string; links: [string, string][] } {
  const links = new LinkSet(url);
  // Fenced code is text (API names are worth finding) but never holds links.
  const parts = content.split(/^(?:```|~~~).*$/m);
  const prose = parts.filter((_, i) => i % 2 === 0).join('\n');
  const defs = new Map<string, string>();
  const withoutDefs = prose.replace(/^ {0,3}\[([^\]\n]+)\]:[ \t]*<?([^\s>]+)>?.*$/gm, (_m, label: string, href: string) => {
    defs.set(label.trim().toLowerCase(), href);
    return '';
  });
  // Images first, so a badge inside a link leaves its alt text as the link's anchor.
  let s = withoutDefs.replace(/!\[([^\]\n]*)\]\([^)\n]*\)/g, '$1').replace(/!\[([^\]\n]*)\]\[[^\]\n]*\]/g, '$1');
  s = s.replace(/\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)/g, (_m, anchor: string, href: string) => {
    links.add(href, mdInline(anchor));
    return ` ${anchor} `;
  });
  s = s.replace(/\[([^\]\n]+)\]\[([^\]\n]*)\]/g, (m, anchor: string, ref: string) => {
    const href = defs.get((ref === '' ? anchor : ref).trim().toLowerCase());
    if (href === undefined) return m;
    links.add(href, mdInline(anchor));
    return ` ${anchor} `;
  });
  s = s.replace(/\[([^\]\n]+)\](?![[(:])/g, (m, anchor: string) => {
    const href = defs.get(anchor.trim().toLowerCase());
    if (href === undefined) return m;
    links.add(href, mdInline(anchor));
    return ` ${anchor} `;
  });
  s = s.replace(/<(https?:\/\/[^>\s]+)>/g, (_m, href: string) => {
    links.add(href, href);
    return ` ${href} `;
  });
  s = s.replace(/<a\s([^>]*)>([\s\S]*?)<\/a\s*>/gi, (_m, attrs: string, inner: string) => {
    const href = /href\s*=\s*(?:"([^"]*)"|'([^']*)')/i.exec(attrs);
    const h = href?.[1] ?? href?.[2];
    if (h !== undefined) links.add(h, stripTags(inner));
    return ` ${inner} `;
  });
  addBareUrls(s.replace(/<[^>]*>/g, ' '), links);
  // Title: the first ATX heading of level 1 (else any level), else a setext heading, else the first line.
  const atx1 = /^ {0,3}#[ \t]+(.+?)[ \t#]*$/m.exec(content)?.[1];
  const atx = atx1 ?? /^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$/m.exec(content)?.[1];
  const setext = /^([^\n]+)\n {0,3}(?:=+|-+)[ \t]*$/m.exec(content)?.[1];
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

/** Parses one fetched document. `url` is its absolute URL (links resolve against it). */
export function parseDocument(url: string, type: DocType, content: string): ParsedDoc {
  const p = type === 'html' ? parseHtml(content, url) : type === 'md' ? parseMarkdown(content, url) : parseText(content, url);
  const fallback = decodeURIComponent(
    url
      .replace(/[?#].*$/, '')
      .replace(/\/+$/, '')
      .split('/')
      .pop() ?? url,
  );
  const title = (p.title || fallback).slice(0, MAX_TITLE);
  const text = p.text.slice(0, MAX_TEXT);
  return { title, text, links: p.links, fingerprint: fingerprint(title, text) };
}

/** Which clustering keys documents carry. */
export type KeyMode = 'content' | 'content+url+title';

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
