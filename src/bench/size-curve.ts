/**
 * Throughput against repository size, from one saturation run: the run is sampled (documents
 * searchable so far, wall time, CPU time, engine reads) and cut into equal parts by documents
 * searchable; each part's rates come from the samples interpolated linearly at its boundaries.
 * One growing repository, so each part is measured at the size it ran at — unlike separate runs
 * of increasing size, whose rates average over every size below theirs.
 *
 * The last part ends when the last document became searchable: the drain after it (rank and
 * export runs still queued) is in the run's overall documents/s, not here.
 */

export interface SizeSample {
  /** Documents searchable so far. Non-decreasing from sample to sample. */
  readonly indexed: number;
  /** Wall time since the run started, ms. */
  readonly ms: number;
  /** Process CPU time (all threads) since the run started, ms. */
  readonly cpuMs: number;
  /** Engine point reads since the run started (null: the store has no engine counters). */
  readonly engineReads: number | null;
  /** Observer runs since the run started, by observer name, and their commits (absent: not sampled). */
  readonly observers?: { readonly runs: Readonly<Record<string, number>>; readonly commits: number };
}

export interface SizeStep {
  /** The part: documents searchable at its start and at its end. */
  readonly indexedFrom: number;
  readonly indexedTo: number;
  readonly documentsPerSecond: number;
  readonly cpuMsPerDocument: number;
  readonly engineReadsPerDocument: number | null;
  /**
   * Observer runs a document in this part, by observer, and commits a document (when sampled): what
   * separates work that grows with the documents' position in the corpus (more of their link targets
   * are already crawled, so more rank and export runs) from each run costing more.
   */
  readonly runsPerDocument?: Readonly<Record<string, number>>;
  readonly commitsPerDocument?: number;
}

/**
 * `parts` equal parts of the documents between the first sample (take it at 0) and the last
 * (fewer parts when there are fewer documents). Empty when no document became searchable.
 */
export function sizeCurve(samples: readonly SizeSample[], parts: number): SizeStep[] {
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (first === undefined || last === undefined || last.indexed <= first.indexed) return [];
  const span = last.indexed - first.indexed;
  const n = Math.max(1, Math.min(Math.floor(parts), span));
  const steps: SizeStep[] = [];
  let from = first;
  for (let k = 1; k <= n; k++) {
    const to = interpolate(samples, first.indexed + Math.round((k * span) / n));
    const docs = to.indexed - from.indexed;
    steps.push({
      indexedFrom: from.indexed,
      indexedTo: to.indexed,
      documentsPerSecond: Math.round(docs / (Math.max(1e-3, to.ms - from.ms) / 1000)),
      cpuMsPerDocument: round2((to.cpuMs - from.cpuMs) / docs),
      engineReadsPerDocument:
        to.engineReads === null || from.engineReads === null ? null : round2((to.engineReads - from.engineReads) / docs),
      ...observersBetween(from, to, docs),
    });
    from = to;
  }
  return steps;
}

/** The sample at exactly `target` documents: between the first sample reaching it and the one before. */
function interpolate(samples: readonly SizeSample[], target: number): SizeSample {
  const i = samples.findIndex((s) => s.indexed >= target);
  const hi = samples[i] as SizeSample;
  const lo = samples[i - 1];
  if (lo === undefined || hi.indexed === target) return hi;
  const f = (target - lo.indexed) / (hi.indexed - lo.indexed);
  const mix = (a: number, b: number) => a + (b - a) * f;
  const lo0 = lo.observers;
  const hi0 = hi.observers;
  return {
    indexed: target,
    ms: mix(lo.ms, hi.ms),
    cpuMs: mix(lo.cpuMs, hi.cpuMs),
    engineReads: lo.engineReads === null || hi.engineReads === null ? null : mix(lo.engineReads, hi.engineReads),
    ...(lo0 === undefined || hi0 === undefined
      ? {}
      : {
          observers: {
            runs: Object.fromEntries(Object.entries(hi0.runs).map(([name, n]) => [name, mix(lo0.runs[name] ?? 0, n)])),
            commits: mix(lo0.commits, hi0.commits),
          },
        }),
  };
}

function observersBetween(from: SizeSample, to: SizeSample, docs: number): Pick<SizeStep, 'runsPerDocument' | 'commitsPerDocument'> {
  const a = from.observers;
  const b = to.observers;
  if (a === undefined || b === undefined) return {};
  const runsPerDocument: Record<string, number> = {};
  for (const [name, n] of Object.entries(b.runs)) runsPerDocument[name] = round2((n - (a.runs[name] ?? 0)) / docs);
  return { runsPerDocument, commitsPerDocument: round2((b.commits - a.commits) / docs) };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/**
 * When the last document became searchable: the time of the first sample with as many documents
 * searchable as the last sample (at most one sampling period late). Null without samples.
 */
export function lastSearchableMs(samples: readonly SizeSample[]): number | null {
  const last = samples[samples.length - 1];
  if (last === undefined) return null;
  return (samples.find((s) => s.indexed >= last.indexed) as SizeSample).ms;
}
