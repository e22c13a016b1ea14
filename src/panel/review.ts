/**
 * Reviewing one step in the panel: the navigation bar (previous, next, back
 * to live) and which step each way leads to.
 *
 * Steps are numbered 1..N in their trajectory; a step under review is shown
 * from the step whole, the one after it and the predictions of both.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import { attrs, button } from '../dom';

/**
 * What the panel shows: the live notebook, or one step.
 */
export type PanelView =
  | { mode: 'live' }
  | {
      mode: 'review';
      step: number;
      /**
       * The trajectory of the step: the current one, or an earlier one of
       * the notebook (a cell not run since its kernel restarted).
       */
      trajectory: string | null;
      /**
       * Whether that is the trajectory followed live.
       */
      current: boolean;
    };

/**
 * The step "previous" leads to: from live, the latest step; `null` at the
 * first step or without steps.
 */
export function previousStep(view: PanelView, lastStep: number): number | null {
  if (view.mode === 'live') {
    return lastStep > 0 ? lastStep : null;
  }
  return view.step > 1 ? view.step - 1 : null;
}

/**
 * Where "next" leads: the next step, or back to live after the latest.
 */
export function nextView(view: PanelView, lastStep: number): PanelView | null {
  if (view.mode === 'live') {
    return null;
  }
  if (view.step < lastStep) {
    return { ...view, step: view.step + 1 };
  }
  return view.current ? { mode: 'live' } : null;
}

export interface IReviewActions {
  previous(): void;
  next(): void;
  live(): void;
}

/**
 * The navigation bar.
 */
export function reviewBar(
  view: PanelView,
  lastStep: number,
  actions: IReviewActions,
  trans: TranslationBundle
): VirtualElement[] {
  const previous = button(trans.__('◀ Previous'), () => actions.previous(), {
    className: 'themisto-Review-previous',
    title: trans.__('Review the step before (Alt+Shift+↑)'),
    disabled: previousStep(view, lastStep) === null
  });
  if (view.mode === 'live') {
    return [
      h(
        'span',
        { className: 'themisto-Review-where', dataset: { view: 'live' } },
        trans.__('Live')
      ),
      previous
    ];
  }
  return [
    h(
      'span',
      {
        ...attrs({
          title: view.current
            ? undefined
            : trans.__('A step of an earlier kernel of this notebook')
        }),
        className: 'themisto-Review-where',
        dataset: { view: 'review' }
      },
      view.current
        ? trans.__('Step %1 of %2', view.step, lastStep)
        : trans.__('Step %1 of %2 (earlier kernel)', view.step, lastStep)
    ),
    previous,
    button(trans.__('Next ▶'), () => actions.next(), {
      className: 'themisto-Review-next',
      title: trans.__('Review the step after (Alt+Shift+↓)'),
      disabled: nextView(view, lastStep) === null
    }),
    button(trans.__('Back to live'), () => actions.live(), {
      className: 'themisto-Review-live',
      title: trans.__('Follow the notebook live again (Alt+Shift+L)')
    })
  ];
}
