/**
 * A synthetic corpus shaped like the paper's clustering benchmark: documents are clustered by
 * three keys (content fingerprint, normalized URL, title), clusters hold ~3.3 documents on
 * average, and ~93 % of documents are in a cluster of more than one. Seeded and deterministic:
 * document i (at crawl version v) is a pure function of (seed, N, i, v), so any N can be
 * streamed without holding the corpus in memory (only a few bytes of layout per document).
 *
 * Cluster layout: with probability 0.2314 a cluster is a singleton, else it has 2–6 members
 * (uniform). Then the expected size is 4 − 3·0.2314 ≈ 3.31 and singletons hold
 * 0.2314 / 3.31 ≈ 7 % of the documents. Member 0 is the original; every other member is related
 * to it by exactly one kind of key — an exact copy at another URL (same fingerprint), the same
 * page under a URL variant (same normalized URL, different content), or another page with the
 * same title — so each key kind does real clustering work.
 *
 * Links: 3–10 per document, to targets drawn with a skew towards low document numbers (popular
 * pages), with anchor text taken from the target's title; many links land on duplicates.
 */
import type { CrawledDoc } from '../loader.js';
import { mulberry32 as rng } from '../../../util/seeded-random.js';

export interface SyntheticOptions {
  readonly docs: number;
  readonly seed?: number;
}

const SINGLETON = 0.2314;
const REL_COPY = 0;
const REL_URL = 1;
const REL_TITLE = 2;

/** splitmix32-style hash of several integers → uint32. */
function mix(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ (x | 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

const SYLLABLES = 'ka lo mi ne su ta ri po ve da zu fe gi ho ja ku le mo na pe qu ro sa ti vu wa xe yo za be ci do fu ga hi'.split(' ');
/** 3 000 pseudo-words; lower ranks are drawn more often (Zipf-like). */
const VOCAB: string[] = (() => {
  const r = rng(7);
  const words = new Set<string>();
  while (words.size < 3000) {
    const n = 2 + Math.floor(r() * 3);
    let w = '';
    for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(r() * SYLLABLES.length)];
    words.add(w);
  }
  return [...words];
})();

function word(r: () => number): string {
  return VOCAB[Math.floor(VOCAB.length * r() ** 2.5)] as string;
}

export class SyntheticCorpus {
  readonly size: number;
  readonly seed: number;
  /** Cluster of each document, the document's member index, and its relation to member 0. */
  private readonly clusterOf: Int32Array;
  private readonly memberOf: Uint8Array;
  private readonly relationOf: Uint8Array;
  readonly clusters: number;

  constructor(options: SyntheticOptions) {
    this.size = Math.max(0, Math.floor(options.docs));
    this.seed = options.seed ?? 42;
    this.clusterOf = new Int32Array(this.size);
    this.memberOf = new Uint8Array(this.size);
    this.relationOf = new Uint8Array(this.size);
    const r = rng(mix(this.seed, 1));
    let i = 0;
    let c = 0;
    while (i < this.size) {
      const size = r() < SINGLETON ? 1 : 2 + Math.floor(r() * 5);
      for (let j = 0; j < size && i < this.size; j++, i++) {
        this.clusterOf[i] = c;
        this.memberOf[i] = j;
        this.relationOf[i] = j === 0 ? REL_COPY : Math.floor(r() * (REL_TITLE + 1));
      }
      c++;
    }
    this.clusters = c;
  }

  /** The generating cluster of document i (ground truth for tests). */
  clusterOfDoc(i: number): number {
    return this.clusterOf[i] as number;
  }

  private slug(c: number): string {
    const r = rng(mix(this.seed, 2, c));
    return `${word(r)}-${word(r)}-${c}`;
  }

  private host(c: number): string {
    return `site${c % 997}.example`;
  }

  private baseTitle(c: number, version: number): string {
    const r = rng(mix(this.seed, 3, c));
    const t = `${cap(word(r))} ${word(r)} ${word(r)} ${c}`;
    return version > 0 && version % 2 === 0 ? `${t} (revised ${version})` : t;
  }

  url(i: number): string {
    const c = this.clusterOf[i] as number;
    const j = this.memberOf[i] as number;
    const rel = this.relationOf[i] as number;
    if (j === 0) return `https://${this.host(c)}/${this.slug(c)}`;
    if (rel === REL_COPY) return `https://mirror${j}.${this.host(c)}/${this.slug(c)}`;
    if (rel === REL_URL)
      return j % 2 === 0
        ? `http://www.${this.host(c)}/${this.slug(c)}/?ref=${j}`
        : `https://www.${this.host(c)}/${this.slug(c)}/index.html?ref=${j}`;
    return `https://other${j}.example/${this.slug(c)}-${j}`;
  }

  /**
   * Title of document i at a version. A re-crawled copy gets a title of its own (it leaves the
   * cluster: a split); a re-crawled original changes title on even versions (its same-title
   * members split off as a cluster of their own).
   */
  title(i: number, version = 0): string {
    const c = this.clusterOf[i] as number;
    const j = this.memberOf[i] as number;
    const rel = this.relationOf[i] as number;
    if (j === 0) return this.baseTitle(c, version);
    if (rel === REL_URL) return `${this.baseTitle(c, 0)} — mirror ${j}${version > 0 ? ` v${version}` : ''}`;
    if (rel === REL_COPY) return version === 0 ? this.baseTitle(c, 0) : `${this.baseTitle(c, 0)} — copy ${j} v${version}`;
    return this.baseTitle(c, 0);
  }

  /** Markdown content of document i at crawl version `version` (0 = first crawl). */
  content(i: number, version = 0): string {
    const c = this.clusterOf[i] as number;
    const j = this.memberOf[i] as number;
    const rel = this.relationOf[i] as number;
    // Exact copies share the original's body (and title) unless re-crawled into a new version.
    const copy = j > 0 && rel === REL_COPY && version === 0;
    const r = rng(mix(this.seed, 4, c, copy ? 0 : j, version));
    const lr = rng(mix(this.seed, 5, c, copy ? 0 : j, version));
    const title = this.title(i, version);
    const paragraphs: string[] = [];
    const links = 3 + Math.floor(lr() * 8);
    let linked = 0;
    for (let p = 0; p < 4; p++) {
      const words: string[] = [`topic${c}`];
      for (let k = 0; k < 30; k++) words.push(word(r));
      if (linked < links) {
        for (let l = 0; l < Math.ceil(links / 4) && linked < links; l++, linked++) {
          const t = Math.min(this.size - 1, Math.floor(this.size * lr() ** 2));
          const anchor = this.title(t)
            .split(' ')
            .slice(0, 1 + Math.floor(lr() * 3))
            .join(' ');
          words.splice(1 + Math.floor(lr() * words.length), 0, `[${anchor}](${this.url(t)})`);
        }
      }
      paragraphs.push(words.join(' '));
    }
    if (version > 0 && !copy) paragraphs.push(`Revision ${version} of this page.`);
    return `# ${title}\n\n${paragraphs.join('\n\n')}\n`;
  }

  doc(i: number, version = 0): CrawledDoc {
    return { url: this.url(i), content: this.content(i, version), type: 'md' };
  }

  /** Documents [from, to) at `version`. */
  *documents(from = 0, to = this.size, version = 0): Generator<CrawledDoc> {
    for (let i = from; i < to; i++) yield this.doc(i, version);
  }
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
