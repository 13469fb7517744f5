/**
 * Plots for benchmark reports, as standalone SVG strings: a line chart (several series of (x, y)
 * points, either axis linear or log₁₀, with optional vertical markers) and a grouped bar chart.
 * Benchmarks write them next to their numbers (e.g. `bench latency --svg`, the paper's Figure 7).
 *
 * Why hand-written: the plotting libraries on the npm registry that emit SVG either need a DOM
 * (Observable Plot, d3-node via jsdom, Chartist) or pull in a large dependency tree (Vega); these
 * charts need only axes, ticks, polylines, rectangles and a legend. No dependencies, no browser.
 *
 * Values that a log axis cannot show (≤ 0) and non-finite values are left out of the plot.
 */

export interface LineSeries {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

export interface LineChartOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly LineSeries[];
  readonly logX?: boolean;
  readonly logY?: boolean;
  /** Vertical dashed lines at these x values (e.g. a crossover point). */
  readonly markers?: readonly { readonly x: number; readonly label: string }[];
  readonly width?: number;
  readonly height?: number;
}

export interface BarChartOptions {
  readonly title: string;
  readonly xLabel?: string;
  readonly yLabel: string;
  /** One group of bars per category, one bar per series within a group. */
  readonly categories: readonly string[];
  readonly series: readonly { readonly name: string; readonly values: readonly number[] }[];
  readonly logY?: boolean;
  readonly width?: number;
  readonly height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
const DASHES = ['', '6 4', '2 3', '8 3 2 3'];
const MARGIN = { top: 62, right: 24, bottom: 54, left: 72 };
const LEGEND_Y = 46;

/** Escapes text for SVG content and attribute values. */
export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Short tick label: 1, 2.5, 10k, 3M, 0.01. */
export function formatTick(v: number): string {
  const a = Math.abs(v);
  const trim = (x: number) => String(Number(x.toPrecision(3)));
  if (a >= 1e6) return `${trim(v / 1e6)}M`;
  if (a >= 1e4) return `${trim(v / 1e3)}k`;
  return trim(v);
}

interface Axis {
  readonly lo: number;
  readonly hi: number;
  readonly ticks: number[];
  readonly log: boolean;
}

/** A domain covering `values` with round bounds, and its tick values. */
function axis(values: readonly number[], log: boolean, includeZero: boolean): Axis {
  if (log) {
    let lo = Math.floor(Math.log10(Math.min(...values)));
    let hi = Math.ceil(Math.log10(Math.max(...values)));
    if (hi === lo) hi++;
    const ticks: number[] = [];
    const step = Math.max(1, Math.ceil((hi - lo) / 8));
    for (let e = lo; e <= hi; e += step) ticks.push(10 ** e);
    if (hi - lo <= 2) for (let e = lo; e < hi; e++) ticks.push(2 * 10 ** e, 5 * 10 ** e);
    lo = 10 ** lo;
    hi = 10 ** hi;
    return { lo, hi, ticks: ticks.sort((a, b) => a - b), log };
  }
  let min = Math.min(...values, ...(includeZero ? [0] : []));
  let max = Math.max(...values);
  if (max === min) max = min + 1;
  const raw = (max - min) / 6;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * p >= raw) ?? 10) * p;
  min = Math.floor(min / step) * step;
  max = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let t = min; t <= max + step / 2; t += step) ticks.push(Number(t.toPrecision(12)));
  return { lo: min, hi: max, ticks, log };
}

/** Maps a value of `a` to a pixel offset in [0, span]. */
function scale(a: Axis, span: number): (v: number) => number {
  if (a.log) {
    const lo = Math.log10(a.lo);
    const hi = Math.log10(a.hi);
    return (v) => ((Math.log10(v) - lo) / (hi - lo)) * span;
  }
  return (v) => ((v - a.lo) / (a.hi - a.lo)) * span;
}

const n = (v: number) => String(Math.round(v * 10) / 10);

/** The frame shared by both charts: title, grid, y axis, axis labels. */
function frame(
  o: { title: string; xLabel?: string; yLabel: string; width: number; height: number },
  y: Axis,
  sy: (v: number) => number,
): string[] {
  const { width: w, height: h } = o;
  const ph = h - MARGIN.top - MARGIN.bottom;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="sans-serif" font-size="12">`,
    `<rect x="0" y="0" width="${w}" height="${h}" fill="#ffffff"/>`,
    `<text x="${n(w / 2)}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(o.title)}</text>`,
  ];
  for (const t of y.ticks) {
    const py = MARGIN.top + ph - sy(t);
    out.push(`<line x1="${MARGIN.left}" y1="${n(py)}" x2="${w - MARGIN.right}" y2="${n(py)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${MARGIN.left - 6}" y="${n(py + 4)}" text-anchor="end">${escapeXml(formatTick(t))}</text>`);
  }
  out.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + ph}" stroke="#333333"/>`);
  out.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top + ph}" x2="${w - MARGIN.right}" y2="${MARGIN.top + ph}" stroke="#333333"/>`);
  const cy = MARGIN.top + ph / 2;
  out.push(`<text x="18" y="${n(cy)}" text-anchor="middle" transform="rotate(-90 18 ${n(cy)})">${escapeXml(o.yLabel)}</text>`);
  if (o.xLabel !== undefined)
    out.push(
      `<text x="${n(MARGIN.left + (w - MARGIN.left - MARGIN.right) / 2)}" y="${h - 12}" text-anchor="middle">${escapeXml(o.xLabel)}</text>`,
    );
  return out;
}

/** A legend row under the title, outside the plot area (so it never hides data or markers). */
function legend(names: readonly string[], swatch: (i: number, x: number, y: number) => string): string[] {
  const out = [`<g>`];
  let x = MARGIN.left;
  names.forEach((name, i) => {
    out.push(swatch(i, x, LEGEND_Y - 4));
    out.push(`<text x="${x + 28}" y="${LEGEND_Y}">${escapeXml(name)}</text>`);
    x += 28 + 6.5 * name.length + 24;
  });
  out.push(`</g>`);
  return out;
}

/** A line chart of `series` (each point a circle, joined by a line), as an SVG document. */
export function renderLineChart(o: LineChartOptions): string {
  const width = o.width ?? 720;
  const height = o.height ?? 440;
  const ok = (x: number, y: number) => Number.isFinite(x) && Number.isFinite(y) && (!o.logX || x > 0) && (!o.logY || y > 0);
  const series = o.series.map((s) => ({ name: s.name, points: s.points.filter(([x, y]) => ok(x, y)) }));
  const all = series.flatMap((s) => s.points);
  const markers = (o.markers ?? []).filter((m) => Number.isFinite(m.x) && (!o.logX || m.x > 0));
  const xs = [...all.map((p) => p[0]), ...markers.map((m) => m.x)];
  const x = axis(xs.length > 0 ? xs : [1], o.logX === true, false);
  const y = axis(all.length > 0 ? all.map((p) => p[1]) : [1], o.logY === true, true);
  const pw = width - MARGIN.left - MARGIN.right;
  const ph = height - MARGIN.top - MARGIN.bottom;
  const sx = scale(x, pw);
  const sy = scale(y, ph);
  const px = (v: number) => MARGIN.left + sx(v);
  const py = (v: number) => MARGIN.top + ph - sy(v);
  const out = frame({ ...o, width, height }, y, sy);
  for (const t of x.ticks) {
    out.push(`<line x1="${n(px(t))}" y1="${MARGIN.top + ph}" x2="${n(px(t))}" y2="${MARGIN.top + ph + 5}" stroke="#333333"/>`);
    out.push(`<text x="${n(px(t))}" y="${MARGIN.top + ph + 18}" text-anchor="middle">${escapeXml(formatTick(t))}</text>`);
  }
  for (const m of markers) {
    out.push(
      `<line x1="${n(px(m.x))}" y1="${MARGIN.top}" x2="${n(px(m.x))}" y2="${MARGIN.top + ph}" stroke="#777777" stroke-dasharray="3 3"/>`,
    );
    const right = sx(m.x) > pw * 0.6; // label on the side with room
    out.push(
      `<text x="${n(px(m.x) + (right ? -4 : 4))}" y="${MARGIN.top + 12}" text-anchor="${right ? 'end' : 'start'}" fill="#555555">${escapeXml(m.label)}</text>`,
    );
  }
  const style = (i: number) => {
    const dash = DASHES[i % DASHES.length] as string;
    return `stroke="${COLORS[i % COLORS.length]}" stroke-width="2" fill="none"${dash === '' ? '' : ` stroke-dasharray="${dash}"`}`;
  };
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length] as string;
    out.push(`<g data-series="${escapeXml(s.name)}">`);
    if (s.points.length > 1) out.push(`<polyline points="${s.points.map(([a, b]) => `${n(px(a))},${n(py(b))}`).join(' ')}" ${style(i)}/>`);
    for (const [a, b] of s.points)
      out.push(
        `<circle cx="${n(px(a))}" cy="${n(py(b))}" r="3.5" fill="${color}"><title>${escapeXml(`${s.name}: (${formatTick(a)}, ${formatTick(b)})`)}</title></circle>`,
      );
    out.push(`</g>`);
  });
  out.push(
    ...legend(
      series.map((s) => s.name),
      (i, lx, ly) => `<line x1="${lx}" y1="${ly}" x2="${lx + 22}" y2="${ly}" ${style(i)}/>`,
    ),
  );
  out.push(`</svg>`);
  return `${out.join('\n')}\n`;
}

/** A grouped bar chart (one group per category), as an SVG document. */
export function renderBarChart(o: BarChartOptions): string {
  const width = o.width ?? 720;
  const height = o.height ?? 440;
  const ok = (v: number) => Number.isFinite(v) && (!o.logY || v > 0);
  const values = o.series.flatMap((s) => s.values.filter(ok));
  const y = axis(values.length > 0 ? values : [1], o.logY === true, true);
  const pw = width - MARGIN.left - MARGIN.right;
  const ph = height - MARGIN.top - MARGIN.bottom;
  const sy = scale(y, ph);
  const out = frame({ ...o, width, height }, y, sy);
  const group = pw / Math.max(1, o.categories.length);
  const bar = (group * 0.8) / Math.max(1, o.series.length);
  o.categories.forEach((c, ci) => {
    const gx = MARGIN.left + ci * group;
    out.push(`<text x="${n(gx + group / 2)}" y="${MARGIN.top + ph + 18}" text-anchor="middle">${escapeXml(c)}</text>`);
    o.series.forEach((s, si) => {
      const v = s.values[ci];
      if (v === undefined || !ok(v)) return;
      const top = MARGIN.top + ph - sy(Math.min(Math.max(v, y.lo), y.hi));
      const label = `${s.name}, ${c}: ${formatTick(v)}`;
      out.push(
        `<rect x="${n(gx + group * 0.1 + si * bar)}" y="${n(top)}" width="${n(bar)}" height="${n(MARGIN.top + ph - top)}" fill="${COLORS[si % COLORS.length]}"><title>${escapeXml(label)}</title></rect>`,
      );
    });
  });
  out.push(
    ...legend(
      o.series.map((s) => s.name),
      (i, lx, ly) => `<rect x="${lx}" y="${ly - 5}" width="22" height="10" fill="${COLORS[i % COLORS.length]}"/>`,
    ),
  );
  out.push(`</svg>`);
  return `${out.join('\n')}\n`;
}

/**
 * Problems that make `svg` not a well-formed SVG document (empty when it is): unbalanced or
 * misnested tags, unescaped `<` or `&` in text, a root other than one `<svg>`. A small checker for
 * what these functions emit (no comments, CDATA or processing instructions), not a full XML parser.
 */
export function checkSvg(svg: string): string[] {
  const problems: string[] = [];
  const stack: string[] = [];
  let roots = 0;
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(svg); m !== null; m = tag.exec(svg)) {
    const text = svg.slice(last, m.index);
    if (/[<>]/.test(text) || /&(?!(amp|lt|gt|quot|apos);)/.test(text))
      problems.push(`bad text at ${last}: ${JSON.stringify(text.slice(0, 40))}`);
    last = tag.lastIndex;
    const [, close, name, attributes, selfClose] = m as unknown as [string, string, string, string, string];
    if (/&(?!(amp|lt|gt|quot|apos);)/.test(attributes)) problems.push(`unescaped & in <${name}> attributes`);
    if (stack.length === 0 && close === '') {
      roots++;
      if (name !== 'svg') problems.push(`root element is <${name}>`);
    }
    if (close === '/') {
      const open = stack.pop();
      if (open !== name) problems.push(`</${name}> closes <${open ?? 'nothing'}>`);
    } else if (selfClose !== '/') stack.push(name);
  }
  if (svg.slice(last).trim() !== '') problems.push(`trailing text: ${JSON.stringify(svg.slice(last, last + 40))}`);
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(', ')}`);
  if (roots !== 1) problems.push(`${roots} root elements`);
  return problems;
}

/** `svg` itself, once `checkSvg` finds nothing wrong with it; otherwise throws with the problems. */
export function checkedSvg(svg: string): string {
  const problems = checkSvg(svg);
  if (problems.length > 0) throw new Error(`malformed SVG: ${problems.join('; ')}`);
  return svg;
}
