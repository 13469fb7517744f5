import { describe, expect, it } from 'vitest';
import { SyntheticCorpus } from './corpus/synthetic.js';
import { type DocType, MAX_PARSED, clusterKeys, collapse, contentText, parseDocument, resolveLink, urlKey } from './parse.js';
import { mulberry32 } from '../../util/seeded-random.js';
import { anchorTermCounts, postingScore, termsOf, tokenize } from './terms.js';

const BASE = 'file:///node_modules/pkg/README.md';

describe('parseDocument (markdown)', () => {
  it('extracts the title, inline, reference, autolink and HTML links, and resolves them', () => {
    const md = [
      '# My Package',
      '',
      'See [the license](LICENSE) and [docs][api], or <https://example.com/x>.',
      '[![npm badge](https://img.shields.io/npm/v/x.svg)](https://www.npmjs.com/package/x)',
      'Jump to [usage](#usage). Mail [me](mailto:a@b.c). <a href="docs/guide.html">Guide</a>',
      '',
      '```js',
      'see [not a link](http://ignored.example/)',
      '```',
      '[api]: ./docs/api.md "API"',
    ].join('\n');
    const p = parseDocument(BASE, 'md', md);
    expect(p.title).toBe('My Package');
    expect(p.links).toEqual([
      ['file:///node_modules/pkg/LICENSE', 'the license'],
      ['file:///node_modules/pkg/docs/api.md', 'docs'],
      ['file:///node_modules/pkg/docs/guide.html', 'Guide'],
      ['https://example.com/x', 'https://example.com/x'],
      ['https://www.npmjs.com/package/x', 'npm badge'],
    ]);
    expect(p.text).toContain('not a link');
    expect(p.text).not.toContain('(LICENSE)');
    expect(p.fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it('falls back to a setext heading, then the first line, then the file name', () => {
    expect(parseDocument(BASE, 'md', 'Title here\n==========\n\nbody').title).toBe('Title here');
    expect(parseDocument(BASE, 'md', '\n  just text\nmore').title).toBe('just text');
    expect(parseDocument('file:///node_modules/pkg/NOTES.md', 'md', '').title).toBe('NOTES.md');
  });

  it('joins several anchors of one target and drops self links', () => {
    const p = parseDocument(BASE, 'md', '[a](x.md) [b](x.md) [a](x.md) [me](README.md) [top](./README.md#top)');
    expect(p.links).toEqual([['file:///node_modules/pkg/x.md', 'a | b']]);
  });
});

describe('parseDocument on hostile input', () => {
  // Openings without closings, and runs a pattern could split many ways: each took time quadratic
  // in its size before (80 KB of `[` 38 s, of `# a` and spaces 22 s, of `<a ` 9 s). At 200 KB a
  // quadratic parse takes minutes; a linear one milliseconds: the bound leaves a loaded machine
  // two orders of magnitude.
  const N = 200_000;
  const cases: [string, DocType, string][] = [
    ['<', 'html', '<'.repeat(N)],
    ['<!--', 'html', '<!--'.repeat(N / 4)],
    ['<script', 'html', '<script'.repeat(N / 7)],
    ['<a href=x>', 'html', '<a href=x>'.repeat(N / 10)],
    ['<a ', 'html', '<a '.repeat(N / 3)],
    ['<title>', 'html', '<title>'.repeat(N / 7)],
    ['<h1>', 'html', '<h1>'.repeat(N / 4)],
    ['<head>', 'html', '<head>'.repeat(N / 6)],
    ['<body', 'html', '<body'.repeat(N / 5)],
    ['<base href="', 'html', '<base href="'.repeat(N / 12)],
    ['[', 'md', '['.repeat(N)],
    ['![', 'md', '!['.repeat(N / 2)],
    ['[x](', 'md', '[x]('.repeat(N / 4)],
    ['![x](', 'md', '![x]('.repeat(N / 5)],
    ['[x][', 'md', '[x]['.repeat(N / 4)],
    ['[a]', 'md', '[a]'.repeat(N / 3)],
    ['[x]( and spaces', 'md', `[x](${' '.repeat(N)}`],
    ['<http://', 'md', '<http://'.repeat(N / 8)],
    ['<a ', 'md', '<a '.repeat(N / 3)],
    ['# a, spaces, b', 'md', `# a${' '.repeat(N)}b`],
    ['# a #…', 'md', `# a${' #'.repeat(N / 2)}x`],
    ['x\\r…', 'md', 'x\r'.repeat(N / 2)],
    // The multiline ^ also follows \r and \u2028: a line start at every other character.
    ['[\\r…', 'md', '[\r'.repeat(N / 2)],
    ['[a\\r…', 'md', '[a\r'.repeat(N / 3)],
    ['[\\u2028…', 'md', '[\u2028'.repeat(N / 2)],
    ['a URL of dots', 'text', `http://x/${'.'.repeat(N)}a`],
    ['many links to one target', 'md', Array.from({ length: N / 20 }, (_, i) => `[a${i}](t.md)`).join(' ')],
  ];
  it.each(cases)('%s (%s) parses in linear time', (_name, type, content) => {
    const started = performance.now();
    const doc = parseDocument(BASE, type, content);
    expect(performance.now() - started).toBeLessThan(1500);
    expect(doc.fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it('random documents of a few markup pieces repeated parse in linear time too (seeded)', () => {
    // What the list above does not name: 90 documents of 60 KB, each made of up to 7 pieces of
    // markup drawn from the characters and tags the patterns look for. 2 400 such documents took
    // 26 ms at most when this was written; a quadratic pattern takes seconds on one.
    const random = mulberry32(20261203);
    const pieces = ['[', ']', '(', ')', '!', '<', '>', '#', ' ', '\n', '\r', '\t', 'a', 'http://x.y/', '"', "'", '=', '-', '*', '`'];
    pieces.push('<a ', 'href=', '</a>', '<!--', '-->', '<script', '</script>', '<title', '<h1', '<body', '<head', '<base ', ']:', '```');
    pieces.push('.', ',', '&', '&#', '\u2028', '==', '%', '_', '|', '1.', '+', 'https://', ':', '/');
    for (let k = 0; k < 90; k++) {
      const pool = Array.from({ length: 1 + Math.floor(random() * 7) }, () => pieces[Math.floor(random() * pieces.length)] as string);
      let content = '';
      while (content.length < 60_000) content += pool[Math.floor(random() * pool.length)];
      const type = (['md', 'html', 'text'] as const)[k % 3];
      const started = performance.now();
      parseDocument(BASE, type, content);
      expect(performance.now() - started, `${type} of ${JSON.stringify(pool)}`).toBeLessThan(1500);
    }
  });

  it('the linear forms find what the patterns they replace found', () => {
    // Spans as /<a\s([^>]*)>([\s\S]*?)<\/a\s*>/gi finds them, a `>` missing or a closing missing.
    const html = '<a href="1">one</a><A\thref=2>t<b>w</b>o</a ><a href=3>three<a href=4>four</a> <a href=5 <p>x</p> <a href=6>six';
    expect(parseDocument('https://s.example/', 'html', html).links).toEqual([
      ['https://s.example/1', 'one'],
      ['https://s.example/2', 't w o'],
      ['https://s.example/3', 'three four'],
    ]);
    // The closing run of a heading goes, whatever it is made of; a heading of only #s keeps one.
    expect(parseDocument(BASE, 'md', '#   Title  # ##  \nbody').title).toBe('Title');
    expect(parseDocument(BASE, 'md', 'x\n# ##\nbody').title).toBe('#');
    expect(parseDocument(BASE, 'md', 'Title\r\n=====\r\nbody').title).toBe('Title');
    // An empty destination before a title with a space in it (the match only splitting the spaces
    // finds) is still link syntax, with no target to add.
    const p = parseDocument(BASE, 'md', 'see [x]( "t t") and [y](y.md "why")');
    expect(p.text).toBe('see x and y');
    expect(p.links).toEqual([['file:///node_modules/pkg/y.md', 'y']]);
    // Bracketed text around a link: the link is the innermost pair, as CommonMark has it.
    expect(parseDocument(BASE, 'md', '[[Become a backer](b.md)]').links).toEqual([['file:///node_modules/pkg/b.md', 'Become a backer']]);
    // Past 200 characters of anchors, more anchors of the same target change nothing.
    const many = Array.from({ length: 60 }, (_, i) => `[anchor${i}](t.md)`).join(' ');
    const [[, joined]] = parseDocument(BASE, 'md', many).links as [[string, string]];
    expect(joined).toBe(
      Array.from({ length: 60 }, (_, i) => `anchor${i}`)
        .join(' | ')
        .slice(0, 200),
    );
  });

  it('a URL that is not valid percent-encoding gives its file name as it is, not an error', () => {
    expect(parseDocument('https://example.com/100%', 'text', '').title).toBe('100%');
    expect(parseDocument('https://example.com/%E0%A4%A', 'text', '').title).toBe('%E0%A4%A');
    expect(parseDocument('https://example.com/caf%C3%A9', 'text', '').title).toBe('café');
  });
});

describe('parseDocument on documents longer than MAX_PARSED', () => {
  const url = 'https://example.com/big.html';
  const head = '<html><head><title>Big</title></head><body><a href="/a">first</a> ';

  it('parses only the first MAX_PARSED characters: what lies past them changes nothing', () => {
    const fill = '<p>' + 'x'.repeat(MAX_PARSED) + '</p>';
    const doc = parseDocument(url, 'html', head + fill + '<a href="/b">second</a></body></html>');
    expect(doc.links.map(([t]) => t)).toEqual(['https://example.com/a']);
    expect(doc).toEqual(parseDocument(url, 'html', head + fill + '<a href="/c">other</a> other words'));
    // Shorter than the cap, the tail counts.
    const short = parseDocument(url, 'html', head + '<a href="/b">second</a>');
    expect(short.links.map(([t]) => t)).toEqual(['https://example.com/a', 'https://example.com/b']);
  });

  it('decodes a prefix of long UTF-8 content that parses as the whole content does', () => {
    // 1-, 2-, 3- and 4-byte characters (the last a surrogate pair), past 4 × MAX_PARSED bytes.
    const text = head + 'aé€😀 '.repeat(Math.ceil((4 * MAX_PARSED) / 10) + 7) + '<a href="/z">z</a>';
    const bytes = Buffer.from(text);
    expect(bytes.byteLength).toBeGreaterThan(4 * MAX_PARSED);
    const prefix = contentText(bytes);
    expect(prefix.length).toBeLessThan(text.length);
    expect(prefix.slice(0, MAX_PARSED)).toBe(text.slice(0, MAX_PARSED));
    expect(parseDocument(url, 'html', prefix)).toEqual(parseDocument(url, 'html', text));
    expect(contentText(Buffer.from(head))).toBe(head);
  });

  it('does not cut a surrogate pair in two', () => {
    // A script fills the cap but for the text 'word' and an emoji straddling it: the text kept
    // ends before the emoji, not with half of it (which would be stored as U+FFFD).
    const open = '<html><body><script>';
    const close = '</script>word';
    const page = open + 'x'.repeat(MAX_PARSED - open.length - close.length - 1) + close + '😀 tail';
    expect(page.charCodeAt(MAX_PARSED - 1)).toBe(0xd83d);
    expect(parseDocument(url, 'html', page).text).toBe('word');
  });
});

describe('parseDocument (html and text)', () => {
  it('takes the title tag, anchors, and body text without scripts', () => {
    const html =
      '<html><head><title>Guide &amp; API</title><style>p{}</style></head><body><h1>Head</h1>' +
      '<script>var a="<a href=x>";</script><p>Hello <a href="/other.html">the <b>other</b> page</a>.</p></body></html>';
    const p = parseDocument('https://site.example/docs/index.html', 'html', html);
    expect(p.title).toBe('Guide & API');
    expect(p.links).toEqual([['https://site.example/other.html', 'the other page']]);
    expect(p.text).toBe('Head Hello the other page .');
  });

  it('treats plain text as text with bare URLs as links', () => {
    const p = parseDocument('file:///node_modules/pkg/LICENSE', 'text', 'MIT License\n\nSee https://opensource.org/licenses/MIT.\n');
    expect(p.title).toBe('MIT License');
    expect(p.links).toEqual([['https://opensource.org/licenses/MIT', '']]);
  });

  it('fingerprints exactly what the index shows: same title and text, same fingerprint', () => {
    const a = parseDocument('file:///a/LICENSE', 'text', 'MIT License\n\nPermission   is granted.');
    const b = parseDocument('file:///b/LICENSE', 'text', 'MIT License\nPermission is\ngranted.');
    const c = parseDocument('file:///c/LICENSE', 'text', 'ISC License\nPermission is granted.');
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(a.fingerprint).not.toBe(c.fingerprint);
  });
});

describe('links, keys and terms', () => {
  it('resolves only links to documents', () => {
    expect(resolveLink('#x', BASE)).toBeNull();
    expect(resolveLink('javascript:alert(1)', BASE)).toBeNull();
    expect(resolveLink('../other/README.md#install', BASE)).toBe('file:///node_modules/other/README.md');
    expect(resolveLink('HTTPS://Example.COM/a', BASE)).toBe('https://example.com/a');
  });

  it('normalizes URL keys across scheme, www, trailing slash and index pages', () => {
    const k = urlKey('https://site.example/a');
    expect(urlKey('http://www.site.example/a/')).toBe(k);
    expect(urlKey('https://www.Site.example/a/index.html?ref=2')).toBe(k);
  });

  it('gives the fingerprint key always and the URL and title keys in the three-key mode', () => {
    const p = parseDocument('https://s.example/a', 'md', '# Hello World\n\ntext');
    expect(clusterKeys('https://s.example/a', p, 'content')).toEqual([`fp:${p.fingerprint}`]);
    expect(clusterKeys('https://s.example/a', p, 'content+url+title')).toEqual([
      `fp:${p.fingerprint}`,
      'title:hello world',
      'url:s.example/a',
    ]);
  });

  it('scores title, anchors and body, deterministically, at most 48 terms', () => {
    expect(tokenize('The Quick-brown fox, 2024 and x_y!')).toEqual(['quick', 'brown', 'fox', 'x_y']);
    const t = termsOf('Stream parser', 'a fast stream parser for streams', anchorTermCounts(['parser docs']));
    expect(t.slice(0, 3)).toEqual([
      ['parser', 6],
      ['stream', 4],
      ['docs', 2],
    ]);
    expect(termsOf('t', Array.from({ length: 500 }, (_, i) => `w${i}x`).join(' '), [])).toHaveLength(48);
    expect([1, 2, 3, 4, 7, 8].map(postingScore)).toEqual([1, 2, 2, 3, 3, 4]);
  });

  it('counts the tokens of anchor texts, which score exactly as the texts do', () => {
    const texts = ['Stream parser', 'stream', '', 'parser docs for streams', `${'ab '.repeat(10)}${'long '.repeat(60)}`];
    const counts = anchorTermCounts(texts);
    expect(counts).toEqual([
      ['ab', 10],
      ['docs', 1],
      ['long', 40], // a text's first 50 tokens count: 10 "ab", then 40 of the 60 "long"
      ['parser', 2],
      ['stream', 2],
      ['streams', 1],
    ]);
    // Scoring from the counts is scoring each text's tokens twice, as termsOf weighs anchors.
    const body = 'a fast stream parser';
    const byHand = new Map<string, number>([
      ['stream', 3 + 1 + 4],
      ['parser', 1 + 4],
      ['docs', 2],
      ['streams', 2],
      ['ab', 20],
      ['long', 80],
      ['fast', 1],
    ]);
    for (const [term, score] of termsOf('Stream', body, counts)) expect([term, score]).toEqual([term, byHand.get(term)]);
    expect(termsOf('Stream', body, counts)).toHaveLength(byHand.size);
    // Two members' lists add up.
    expect(termsOf('', '', [...counts, ...anchorTermCounts(['docs'])]).find(([t]) => t === 'docs')).toEqual(['docs', 4]);
  });
});

describe('collapse', () => {
  it('makes every whitespace run one space and trims, as replacing each run does', () => {
    expect(collapse('  a \t b\n\nc\u00a0d\u2003 e  ')).toBe('a b c d e');
    const r = mulberry32(21);
    const alphabet = 'ab  \t\n\r\f\v\u00a0\u2000\u2028\u3000\ufeffxé';
    for (let k = 0; k < 2_000; k++) {
      let s = '';
      for (let i = Math.floor(r() * 60); i > 0; i--) s += alphabet[Math.floor(r() * alphabet.length)];
      expect(collapse(s)).toBe(s.replace(/\s+/g, ' ').trim());
    }
  });
});

describe('SyntheticCorpus', () => {
  it('is shaped like the paper benchmark: ~3.3 documents per cluster, ~93 % in clusters of more than one', () => {
    const c = new SyntheticCorpus({ docs: 20_000, seed: 1 });
    const sizes = new Map<number, number>();
    for (let i = 0; i < c.size; i++) sizes.set(c.clusterOfDoc(i), (sizes.get(c.clusterOfDoc(i)) ?? 0) + 1);
    const perCluster = c.size / sizes.size;
    const inMulti = [...sizes.values()].filter((s) => s > 1).reduce((a, b) => a + b, 0) / c.size;
    expect(perCluster).toBeGreaterThan(3.1);
    expect(perCluster).toBeLessThan(3.5);
    expect(inMulti).toBeGreaterThan(0.91);
    expect(inMulti).toBeLessThan(0.95);
  });

  it('is deterministic, has unique URLs, and its generated clusters are what three-key clustering finds', () => {
    const a = new SyntheticCorpus({ docs: 300, seed: 5 });
    const b = new SyntheticCorpus({ docs: 300, seed: 5 });
    expect(a.content(17)).toBe(b.content(17));
    expect(new Set(Array.from({ length: 300 }, (_, i) => a.url(i))).size).toBe(300);
    // Union of documents sharing a key must reproduce the generator's clusters exactly.
    const owner = new Map<string, number>();
    const parent = Array.from({ length: 300 }, (_, i) => i);
    const find = (x: number): number => (parent[x] === x ? x : (parent[x] = find(parent[x] as number)));
    for (let i = 0; i < 300; i++) {
      const d = a.doc(i);
      for (const k of clusterKeys(d.url, parseDocument(d.url, 'md', d.content as string), 'content+url+title')) {
        const o = owner.get(k);
        if (o === undefined) owner.set(k, i);
        else parent[find(i)] = find(o);
      }
    }
    for (let i = 0; i < 300; i++)
      for (let j = i + 1; j < Math.min(300, i + 8); j++) expect(find(i) === find(j)).toBe(a.clusterOfDoc(i) === a.clusterOfDoc(j));
  });
});
