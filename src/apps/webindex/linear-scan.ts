/**
 * The parser's "from an opening to the first closing after it" patterns, in one pass.
 *
 * Why: V8's regular expressions backtrack. `/<!--[\s\S]*?-->/g` (and `<[^>]*>`, `<script…</script>`,
 * `<a …>…</a>`) scans from every opening to the end of the input when no closing follows, so a
 * crawled page of openings without closings costs time quadratic in its size — 80 KB of `<`
 * took 4.6 s, of `<a ` 9 s, and the worker's one JS thread is blocked meanwhile. Each function
 * here gives exactly what its regular expression gives (the leftmost matches, non-overlapping), in
 * time linear in the input: once no closing follows an opening, none follows any later opening
 * either, so the scan stops there.
 *
 * Invariant: `open` matches a fixed number of characters, and `close` is searched from where the
 * opening (or, with `toTagEnd`, the first `>` after it) ends — as `[\s\S]*?` searches.
 */

export interface Span {
  /** Where the opening starts. */
  readonly start: number;
  /** With `toTagEnd`: the text between the opening and the first `>` after it (`[^>]*`), else ''. */
  readonly tag: string;
  /** The text between the opening (or its `>`) and the closing. */
  readonly body: string;
  /** Where the closing ends. */
  readonly end: number;
}

/**
 * The spans `s.matchAll(/OPEN([\s\S]*?)CLOSE/g)` finds, or with `toTagEnd`
 * `/OPEN([^>]*)>([\s\S]*?)CLOSE/g`, leftmost first; at most `limit` of them. `open` and `close`
 * must be global (`g`) regular expressions; their `lastIndex` is used and left changed.
 */
export function spans(s: string, open: RegExp, close: RegExp, toTagEnd: boolean, limit = Number.POSITIVE_INFINITY): Span[] {
  const out: Span[] = [];
  let pos = 0;
  while (out.length < limit) {
    open.lastIndex = pos;
    const o = open.exec(s);
    if (o === null) break;
    let bodyStart = o.index + o[0].length;
    let tag = '';
    if (toTagEnd) {
      const gt = s.indexOf('>', bodyStart);
      if (gt < 0) break;
      tag = s.slice(bodyStart, gt);
      bodyStart = gt + 1;
    }
    close.lastIndex = bodyStart;
    const c = close.exec(s);
    if (c === null) break;
    out.push({ start: o.index, tag, body: s.slice(bodyStart, c.index), end: c.index + c[0].length });
    pos = c.index + c[0].length;
  }
  return out;
}

/** `s` with each span (`spans`) replaced by what `replace` returns for it. */
export function replaceSpans(
  s: string,
  open: RegExp,
  close: RegExp,
  toTagEnd: boolean,
  replace: (span: Span) => string,
  limit = Number.POSITIVE_INFINITY,
): string {
  let out = '';
  let pos = 0;
  for (const span of spans(s, open, close, toTagEnd, limit)) {
    out += s.slice(pos, span.start) + replace(span);
    pos = span.end;
  }
  return pos === 0 ? s : out + s.slice(pos);
}

/** `s.replace(/<[^>]*>/g, with)`: each `<` up to the first `>` after it replaced. */
export function replaceAngleTags(s: string, with_: string): string {
  let out = '';
  let pos = 0;
  for (;;) {
    const lt = s.indexOf('<', pos);
    if (lt < 0) break;
    const gt = s.indexOf('>', lt + 1);
    if (gt < 0) break;
    out += s.slice(pos, lt) + with_;
    pos = gt + 1;
  }
  return pos === 0 ? s : out + s.slice(pos);
}

/**
 * `s.replace(/[CHARS]+$/, '')` for the characters of `chars`: the trailing run removed. (That
 * regular expression tries every character of a long run and scans the rest of it each time.)
 */
export function trimEndOf(s: string, chars: string): string {
  let end = s.length;
  while (end > 0 && chars.includes(s[end - 1] as string)) end--;
  return end === s.length ? s : s.slice(0, end);
}
