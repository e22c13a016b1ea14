/**
 * The "scores over steps" section of the panel: task and score pickers, the
 * plot (drawn by svgplot.ts) and its legend.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import type { ScoreName } from '../api/model';
import type { PredictionTask } from '../api/records';
import { SCORE_LABELS, scoreTitle } from '../live/scoreformat';
import { attrs } from '../dom';
import { type IPlotSeries, scorePlot } from './svgplot';

/**
 * What the plot shows and how to change it.
 */
export interface IPlotChoice {
  task: PredictionTask;
  score: ScoreName;
  /**
   * The step under review, marked on the plot.
   */
  shown: number | null;
  /**
   * Whose scores these are (the notebook and trajectory).
   */
  source: string;
  onTask(task: PredictionTask): void;
  onScore(score: ScoreName): void;
  /**
   * A point was clicked: review its step.
   */
  onStep(step: number): void;
}

/**
 * What each plot box shows now.
 */
const DRAWN = new WeakMap<HTMLElement, string>();

/**
 * The section's content for the series with points.
 */
export function plotView(
  series: IPlotSeries[],
  choice: IPlotChoice,
  trans: TranslationBundle
): VirtualElement[] {
  const controls = h.div(
    { className: 'themisto-Plot-controls' },
    select(
      trans.__('Task'),
      [
        ['output', trans.__('Output')],
        ['next-cell', trans.__('Next cell')]
      ],
      choice.task,
      value => choice.onTask(value === 'next-cell' ? 'next-cell' : 'output')
    ),
    select(
      trans.__('Score'),
      SCORE_LABELS.map(s => [s.name, s.short]),
      choice.score,
      value => {
        const picked = SCORE_LABELS.find(s => s.name === value);
        if (picked) {
          choice.onScore(picked.name);
        }
      }
    )
  );
  const shown = series.filter(s => s.points.length > 0);
  if (shown.length === 0) {
    return [
      controls,
      h.p({ className: 'themisto-Muted' }, trans.__('No scores to plot yet.'))
    ];
  }
  const legend = h.ul(
    { className: 'themisto-Legend' },
    shown.map((s, i) =>
      h.li(
        h.span({ className: `themisto-Swatch themisto-Series-${i % 6}` }),
        s.label
      )
    )
  );
  const long = scoreTitle(choice.score, trans);
  const title = trans.__('%1 of %2 predictions over steps', long, choice.task);
  // What the drawing depends on: the points are appended to (or, past
  // their bound, shifted in) the same arrays.
  const drawn = JSON.stringify([
    choice.source,
    choice.score,
    choice.shown,
    title,
    shown.map(s => {
      const p = s.points;
      return [s.label, p.length, p[0].step, p[p.length - 1].step];
    })
  ]);
  const renderer = {
    render: (host: HTMLElement) => {
      if (DRAWN.get(host) !== drawn) {
        DRAWN.set(host, drawn);
        host.replaceChildren(
          scorePlot(shown, choice.score, title, {
            shown: choice.shown,
            onStep: step => choice.onStep(step),
            stepLabel: step => trans.__('step %1', step)
          })
        );
      }
    }
  };
  return [controls, h.div({ className: 'themisto-PlotBox' }, renderer), legend];
}

function select(
  label: string,
  options: Array<[string, string]>,
  value: string,
  onChange: (value: string) => void
): VirtualElement {
  return h.label(
    { className: 'themisto-Select' },
    `${label} `,
    h.select(
      {
        className: 'jp-mod-styled',
        'aria-label': label,
        onchange: event => onChange((event.target as HTMLSelectElement).value)
      },
      options.map(([optionValue, text]) =>
        h.option(
          attrs({ value: optionValue, selected: optionValue === value }),
          text
        )
      )
    )
  );
}
