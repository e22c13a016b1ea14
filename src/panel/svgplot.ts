/**
 * A small inline SVG line plot of scores over steps (no chart library: a
 * few polylines on a 0–1 scale): the drawing only; plotsection.ts is the
 * panel section around it.
 */
import type { ScoreName } from '../api/model';
import type { IScorePoint } from '../live/types';

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * An SVG element (Lumino's virtual DOM makes HTML elements only: the plot
 * is drawn directly, and redrawn whole when its points change).
 */
function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  ...children: (Node | string)[]
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    node.setAttribute(name, String(value));
  }
  node.append(...children);
  return node;
}

/**
 * A plotted point: a step and a value in [0, 1].
 */
export interface IPlotPoint {
  step: number;
  value: number;
}

/**
 * One line of the plot.
 */
export interface IPlotSeries {
  label: string;
  points: readonly IScorePoint[];
}

/**
 * Points of one score, averaged into at most `max` buckets of consecutive
 * points so a 1,000-step series stays a light polyline.
 */
export function downsample(
  points: readonly IScorePoint[],
  score: ScoreName,
  max: number
): IPlotPoint[] {
  if (points.length <= max) {
    return points.map(p => ({ step: p.step, value: p.scores[score] }));
  }
  const out: IPlotPoint[] = [];
  const size = points.length / max;
  for (let b = 0; b < max; b++) {
    const start = Math.floor(b * size);
    const end = Math.max(start + 1, Math.floor((b + 1) * size));
    let sum = 0;
    for (let i = start; i < end; i++) {
      sum += points[i].scores[score];
    }
    out.push({ step: points[end - 1].step, value: sum / (end - start) });
  }
  return out;
}

const WIDTH = 300;
const HEIGHT = 120;
const PAD = { left: 28, right: 8, top: 8, bottom: 18 };
const MAX_POINTS = 150;

/**
 * Where a plot's steps and scores go: its steps' range and the coordinates
 * of a step and of a score (0 at the bottom, 1 at the top).
 */
interface IScale {
  minStep: number;
  maxStep: number;
  x(step: number): number;
  y(value: number): number;
}

function scale(lines: { step: number }[][]): IScale {
  let minStep = Infinity;
  let maxStep = -Infinity;
  for (const line of lines) {
    for (const p of line) {
      minStep = Math.min(minStep, p.step);
      maxStep = Math.max(maxStep, p.step);
    }
  }
  if (minStep > maxStep) {
    minStep = 0;
    maxStep = 1;
  }
  const span = Math.max(1, maxStep - minStep);
  const innerW = WIDTH - PAD.left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  return {
    minStep,
    maxStep,
    x: step => PAD.left + ((step - minStep) / span) * innerW,
    y: value => PAD.top + (1 - value) * innerH
  };
}

/**
 * The plot of one score for several series; its colours come from the
 * `themisto-Series-N` classes (theme variables in the style sheet).
 */
export function scorePlot(
  series: IPlotSeries[],
  score: ScoreName,
  title: string,
  options: {
    shown?: number | null;
    onStep?: (step: number) => void;
    stepLabel?: (step: number) => string;
  } = {}
): SVGSVGElement {
  const stepLabel = options.stepLabel ?? ((step: number) => `step ${step}`);
  const lines = series.map(s => downsample(s.points, score, MAX_POINTS));
  const at = scale(lines);
  const root = svg('svg', {
    class: 'themisto-Plot',
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: 'img',
    'aria-label': title
  });
  root.append(svg('title', {}, title), ...axes(at, stepLabel));
  const shown = options.shown ?? null;
  if (shown !== null && shown >= at.minStep && shown <= at.maxStep) {
    root.append(
      svg('line', {
        class: 'themisto-Plot-shown',
        x1: at.x(shown),
        x2: at.x(shown),
        y1: PAD.top,
        y2: HEIGHT - PAD.bottom
      })
    );
  }
  lines.forEach((points, index) => {
    const cls = `themisto-Series-${index % 6}`;
    const coords = points
      .map(p => `${at.x(p.step)},${at.y(p.value)}`)
      .join(' ');
    if (points.length > 1) {
      root.append(
        svg('polyline', { class: `themisto-Plot-line ${cls}`, points: coords })
      );
    }
    // Every point is a dot that shows its step when clicked (a wide
    // transparent stroke makes it easy to hit).
    for (const point of points) {
      const dot = svg(
        'circle',
        {
          class: `themisto-Plot-dot ${cls}`,
          cx: at.x(point.step),
          cy: at.y(point.value),
          r: 2.5,
          'data-step': point.step
        },
        svg(
          'title',
          {},
          `${series[index].label}, ${stepLabel(point.step)}: ${point.value.toFixed(2)}`
        )
      );
      const onStep = options.onStep;
      if (onStep) {
        dot.addEventListener('click', () => onStep(point.step));
      }
      root.append(dot);
    }
  });
  return root;
}

/**
 * The grid lines at 0, 0.5 and 1 with their labels, and the first and last
 * steps.
 */
function axes(at: IScale, stepLabel: (step: number) => string): SVGElement[] {
  const out: SVGElement[] = [];
  for (const tick of [0, 0.5, 1]) {
    out.push(
      svg('line', {
        class: 'themisto-Plot-grid',
        x1: PAD.left,
        x2: WIDTH - PAD.right,
        y1: at.y(tick),
        y2: at.y(tick)
      }),
      svg(
        'text',
        {
          class: 'themisto-Plot-label',
          x: PAD.left - 4,
          y: at.y(tick) + 3,
          'text-anchor': 'end'
        },
        tick.toFixed(1)
      )
    );
  }
  out.push(
    svg(
      'text',
      { class: 'themisto-Plot-label', x: PAD.left, y: HEIGHT - 4 },
      stepLabel(at.minStep)
    ),
    svg(
      'text',
      {
        class: 'themisto-Plot-label',
        x: WIDTH - PAD.right,
        y: HEIGHT - 4,
        'text-anchor': 'end'
      },
      stepLabel(at.maxStep)
    )
  );
  return out;
}
